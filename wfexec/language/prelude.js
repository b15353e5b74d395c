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

  // -- YAML through js-yaml (vendor/js-yaml.min.js, evaluated before this file): the engine
  //    refuses calls into the host while a time limit is set, and every evaluation has one.
  //    YAML 1.2's core schema, as the loader reads workflows; values come back as JSON types.
  const yaml = globalThis.jsyaml;
  delete globalThis.jsyaml;
  const parseYaml = (source) => yaml.load(String(source ?? ""));
  const serializeYaml = (value) => yaml.dump(JSON.parse(JSON.stringify(value ?? null)), { lineWidth: -1 });

  // -- values crossing to Python. The host reads a string as C text, so a NUL would end it and a lone
  //    surrogate is no UTF-8; anything not a number, a boolean, null or such a clean string leaves as
  //    "\x01" + its JSON text, built here where an error still has the expression's position; "\x02" when
  //    the text holds BigInts, written `<digits>e0`, a form JSON.stringify never gives a Number, so the
  //    host tells an exact integer from a double.
  const needsText = /^[\x01\x02]|[\0\ud800-\udfff]/;
  const bigintAsNumber = (key, value) => typeof value === "bigint" ? JSON.rawJSON(`${value}e0`) : value;
  const described = (error) => { try { return String(error); } catch { return "an exception"; } };
  const refused = (why) => new TypeError(`the value cannot be stored: ${why}`);
  const toHost = (value) => {
    const type = typeof value;
    if (type === "number" || type === "boolean" || value === undefined || value === null) return value;
    // slice(0) flattens a string built by concatenation (a rope), a kind of string the host cannot read.
    if (type === "string") return needsText.test(value) ? ("\x01" + JSON.stringify(value)).slice(0) : value.slice(0);
    if (type === "bigint") return `\x02${value}e0`.slice(0);
    if (type === "function" || type === "symbol") throw refused(`it is a ${type}, not data`);
    let text, marker = "\x01";
    try {
      try {
        text = JSON.stringify(value);
      } catch (error) {
        // A BigInt makes the plain form throw; the replacer that writes BigInts costs a call per value, so
        // it runs only then (a TypeError of another cause throws again).
        if (!(error instanceof TypeError)) throw error;
        text = JSON.stringify(value, bigintAsNumber);
        marker = "\x02";
      }
    } catch (error) {
      if (error instanceof RangeError && /stack/.test(error.message)) {
        throw refused("it nests too deep (more than 200 levels)");
      }
      throw refused(described(error));
    }
    return text === undefined ? undefined : (marker + text).slice(0);
  };
  // Integers the JSON text from Python holds beyond Number.MAX_SAFE_INTEGER arrive as BigInts (a Number
  // would round them); only used when the text has such a number.
  const integerText = /^-?[0-9]+$/;
  const fromHost = (key, value, context) =>
    typeof value === "number" && !Number.isSafeInteger(value) && integerText.test(context.source) ?
      BigInt(context.source) : value;

  const helpers = { len, contains, startswith, endswith, parseYaml, serializeYaml };
  for (const [name, fn] of Object.entries(helpers)) {
    Object.defineProperty(globalThis, name, { value: fn, enumerable: false });
  }
  Object.defineProperty(globalThis, "Date", { value: ClockDate, enumerable: false });
  Object.defineProperty(globalThis, "__wfexec_clock", { value: setClock, enumerable: false });
  Object.defineProperty(globalThis, "__wfexec_out", { value: toHost, enumerable: false });
  Object.defineProperty(globalThis, "__wfexec_revive", { value: fromHost, enumerable: false });
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
