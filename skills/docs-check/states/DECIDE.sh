# The main agent's result routes the node: `publish` goes to write_report, anything else to `held`.
case "$RAYMOND_INPUT" in
  yes|y|Yes|YES) echo "<result>publish</result>" ;;
  *) echo "<result>hold</result>" ;;
esac
