// Run once in each expression context, before any workflow code: the helpers
// workflows call, a clock the run records, and frozen intrinsics.
(() => {
  "use strict";

  // -- the clock: `Date.now()`, `new Date()` and `performance.now()` read the time the
  //    run recorded for the step (set before every evaluation), so a resumed or replayed
  //    run computes the same values.
  let now = 0;
  const RealDate = Date;
  function ClockDate(...args) {
    if (!new.target) return new RealDate(now).toString();
    return args.length ? new RealDate(...args) : new RealDate(now);
  }
  ClockDate.prototype = RealDate.prototype;
  ClockDate.now = () => now;
  ClockDate.parse = RealDate.parse;
  ClockDate.UTC = RealDate.UTC;
  Object.defineProperty(RealDate.prototype, "constructor", { value: ClockDate });
  const setClock = (milliseconds) => { now = milliseconds; };
  const performanceNow = () => now;

  // -- the seed's helpers
  const isObject = (x) => x !== null && typeof x === "object";
  const sameValue = (a, b) => a === b || (isObject(a) && isObject(b) && JSON.stringify(a) === JSON.stringify(b));
  const len = (x) => x == null ? 0 : (isObject(x) && !Array.isArray(x) ? Object.keys(x).length : (x.length ?? 0));
  const contains = (container, item) => {
    if (container == null) return false;
    if (typeof container === "string") return container.includes(String(item));
    if (Array.isArray(container)) return container.some((x) => sameValue(x, item));
    if (isObject(container)) return Object.prototype.hasOwnProperty.call(container, item);
    return false;
  };
  const startswith = (text, prefix) => typeof text === "string" && text.startsWith(prefix);
  const endswith = (text, suffix) => typeof text === "string" && text.endsWith(suffix);

  // -- YAML, written here rather than called in Python: the engine refuses calls into the
  //    host while a time limit is set, and every evaluation has one.
  const PLAIN = /^[A-Za-z_\/.][\w .\/@+-]*$/;
  const RESERVED = /^(?:true|false|null|yes|no|on|off|y|n|~|[-+]?(?:\.inf|\.nan|[0-9][0-9_.eE+-]*))$/i;
  const scalar = (value) => {
    if (value === null || value === undefined) return "null";
    if (typeof value === "boolean" || typeof value === "number") return Number.isFinite(value) || typeof value === "boolean" ? String(value) : "null";
    const text = String(value);
    if (PLAIN.test(text) && !RESERVED.test(text) && !/ $/.test(text) && !/: | #/.test(text)) return text;
    return JSON.stringify(text);
  };
  const emit = (value, indent, lines, prefix) => {
    const pad = " ".repeat(indent);
    if (Array.isArray(value) && value.length) {
      if (prefix !== null) lines.push(prefix);
      for (const item of value) {
        if (isObject(item) && len(item)) {
          const inner = [];
          emit(item, indent + 2, inner, null);
          inner[0] = pad + "- " + inner[0].slice(indent + 2);
          lines.push(...inner);
        } else {
          lines.push(pad + "- " + flow(item));
        }
      }
    } else if (isObject(value) && !Array.isArray(value) && len(value)) {
      if (prefix !== null) lines.push(prefix);
      for (const [key, item] of Object.entries(value)) {
        if (item === undefined || typeof item === "function") continue;
        const head = pad + scalar(key) + ":";
        if (isObject(item) && len(item)) emit(item, Array.isArray(item) ? indent : indent + 2, lines, head);
        else lines.push(head + " " + flow(item));
      }
    } else {
      lines.push((prefix === null ? pad : prefix + " ") + flow(value));
    }
  };
  const flow = (value) => {
    if (Array.isArray(value)) return value.length ? JSON.stringify(value) : "[]";
    if (isObject(value)) return len(value) ? JSON.stringify(value) : "{}";
    return scalar(value);
  };
  const serializeYaml = (value) => {
    const lines = [];
    emit(JSON.parse(JSON.stringify(value ?? null)), 0, lines, null);
    return lines.join("\n") + "\n";
  };

  // parseYaml reads block mappings and sequences, flow collections written as JSON, and
  // plain, single- and double-quoted scalars: the YAML that tools (and serializeYaml) write.
  const parseScalar = (text) => {
    text = text.replace(/\s+#.*$/, "").trim();
    if (text === "" || text === "~" || text === "null") return null;
    if (text === "true") return true;
    if (text === "false") return false;
    if (/^[-+]?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?$/.test(text)) return Number(text);
    if (text.startsWith('"') || text.startsWith("[") || text.startsWith("{")) {
      try { return JSON.parse(text); } catch (e) { /* not JSON: fall through to a string */ }
    }
    if (text.startsWith("'") && text.endsWith("'") && text.length > 1) return text.slice(1, -1).replaceAll("''", "'");
    return text;
  };
  const parseYaml = (source) => {
    const lines = String(source).split(/\r?\n/)
      .filter((l) => l.trim() !== "" && !/^\s*#/.test(l) && l.trim() !== "---" && l.trim() !== "...")
      .map((l) => ({ indent: l.length - l.trimStart().length, text: l.trim() }));
    let at = 0;
    const block = (indent) => {
      if (at >= lines.length) return null;
      const first = lines[at];
      if (first.text.startsWith("- ") || first.text === "-") {
        const list = [];
        while (at < lines.length && lines[at].indent === first.indent && (lines[at].text.startsWith("- ") || lines[at].text === "-")) {
          const rest = lines[at].text.slice(2);
          if (rest.trim() === "") { at++; list.push(at < lines.length && lines[at].indent > first.indent ? block(lines[at].indent) : null); continue; }
          // `- key: value` opens a mapping whose keys sit two columns further in
          lines[at] = { indent: first.indent + 2, text: rest };
          if (/^[^"'\[{][^:]*:(?:\s|$)/.test(rest) || /^"[^"]*":(?:\s|$)/.test(rest)) list.push(block(first.indent + 2));
          else { list.push(parseScalar(rest)); at++; }
        }
        return list;
      }
      const match = /^("[^"]*"|'[^']*'|[^:]+?):(?:\s+(.*))?$/.exec(first.text);
      if (!match) { at++; return parseScalar(first.text); }
      const map = {};
      while (at < lines.length && lines[at].indent === first.indent) {
        const m = /^("[^"]*"|'[^']*'|[^:]+?):(?:\s+(.*))?$/.exec(lines[at].text);
        if (!m) throw new SyntaxError(`parseYaml: expected \`key: value\`, found \`${lines[at].text}\``);
        const key = String(parseScalar(m[1]));
        const rest = (m[2] ?? "").replace(/^#.*$/, "");
        at++;
        if (rest.trim() === "|" || rest.trim() === ">" || rest.trim() === "|-" || rest.trim() === ">-") {
          const parts = [];
          while (at < lines.length && lines[at].indent > first.indent) parts.push(lines[at++].text);
          const joined = rest.trim().startsWith("|") ? parts.join("\n") : parts.join(" ");
          map[key] = rest.trim().endsWith("-") ? joined : joined + "\n";
        } else if (rest.trim() !== "") {
          map[key] = parseScalar(rest);
        } else if (at < lines.length && (lines[at].indent > first.indent ||
                   (lines[at].indent === first.indent && lines[at].text.startsWith("- ")))) {
          map[key] = block(lines[at].indent);
        } else {
          map[key] = null;
        }
      }
      return map;
    };
    if (lines.length === 1 && !/^[^"'\[{][^:]*:(?:\s|$)/.test(lines[0].text) && !lines[0].text.startsWith("- ")) return parseScalar(lines[0].text);
    return block(lines.length ? lines[0].indent : 0);
  };

  const helpers = { len, contains, startswith, endswith, parseYaml, serializeYaml };
  for (const [name, fn] of Object.entries(helpers)) {
    Object.defineProperty(globalThis, name, { value: fn, enumerable: false });
  }
  Object.defineProperty(globalThis, "Date", { value: ClockDate, enumerable: false });
  Object.defineProperty(globalThis, "__wfexec_clock", { value: setClock, enumerable: false });
  Object.defineProperty(globalThis, "performance", { value: { now: performanceNow, timeOrigin: 0 }, enumerable: false });

  // -- freeze every intrinsic reachable from the global object, and the global object:
  //    what one evaluation does to a prototype (`Object.prototype.x = 1`) cannot reach the next.
  const seen = new Set();
  const freeze = (value) => {
    if (value === null || (typeof value !== "object" && typeof value !== "function") || seen.has(value)) return;
    seen.add(value);
    Object.freeze(value);
    for (const key of Reflect.ownKeys(value)) {
      const descriptor = Object.getOwnPropertyDescriptor(value, key);
      if ("value" in descriptor) freeze(descriptor.value);
      else { freeze(descriptor.get); freeze(descriptor.set); }
    }
    freeze(Object.getPrototypeOf(value));
  };
  for (const key of Reflect.ownKeys(globalThis)) {
    const descriptor = Object.getOwnPropertyDescriptor(globalThis, key);
    if ("value" in descriptor) freeze(descriptor.value);
  }
  // Intrinsics not reachable by name from the global object.
  freeze(Object.getPrototypeOf(function* () {}));
  freeze(Object.getPrototypeOf(async function () {}));
  freeze(Object.getPrototypeOf(async function* () {}));
  freeze(Object.getPrototypeOf([][Symbol.iterator]()));
  freeze(Object.getPrototypeOf(""[Symbol.iterator]()));
  freeze(Object.getPrototypeOf(new Map()[Symbol.iterator]()));
  freeze(Object.getPrototypeOf(new Set()[Symbol.iterator]()));
  freeze(Object.getPrototypeOf(/x/[Symbol.matchAll]("")));
  Object.freeze(globalThis);
})();
