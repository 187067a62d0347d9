#!/usr/bin/env bash
# Opens every report page (*.html timelines) and chart (*.svg plots) under the
# given directories in headless Chromium and fails if one does not load and
# draw: a console message (a script error), an SVG parse error, or a timeline
# whose own on-load check (body[data-rendered], see sim/src/timeline.rs) did
# not say "ok". It first proves it can fail, on a page with a script error and
# a truncated SVG.
#
#   sim/check-in-chromium.sh reports            # the committed report
#   rp-sim report --out /tmp/r --seeds 3 --mutation-seeds 0 && sim/check-in-chromium.sh /tmp/r
#
# Needs Debian's chromium (apt-get install -y chromium); $CHROMIUM overrides.
set -euo pipefail

chromium="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}"
if [ -z "$chromium" ]; then
  echo "check-in-chromium: chromium not found; install it with: apt-get install -y chromium" >&2
  exit 2
fi
if [ "$#" -eq 0 ]; then
  echo "usage: $0 DIR..." >&2
  exit 2
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# Flags: no sandbox (root in CI), and nothing that reaches for the network,
# which this machine refuses (and which a self-contained page never needs).
open_page() { # file -> DOM on stdout, Chromium's log in $scratch/log
  timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$scratch/profile" --enable-logging=stderr --v=0 \
    --dump-dom "file://$(realpath "$1")" 2>"$scratch/log"
}

# Prints why FILE failed to load and draw, or nothing.
verdict() {
  local file="$1" dom
  if ! dom="$(open_page "$file")"; then
    echo "chromium failed to open it"
    return
  fi
  if grep -q ':CONSOLE' "$scratch/log"; then
    grep ':CONSOLE' "$scratch/log" | head -3
    return
  fi
  case "$file" in
    *.svg)
      if grep -q '<parsererror' <<<"$dom"; then
        echo "SVG parse error: $(grep -o 'error on line[^<]*' <<<"$dom" | head -1)"
      elif ! grep -q '<svg' <<<"$dom"; then
        echo "no <svg> element in the loaded document"
      fi
      ;;
    *.html)
      if ! grep -q 'data-rendered="ok"' <<<"$dom"; then
        echo "the page's on-load check did not pass: $(grep -o 'data-rendered="[^"]*"' <<<"$dom" | head -1)"
      fi
      ;;
  esac
}

# The check must be able to fail.
printf '<!DOCTYPE html><body data-rendered="pending"><script>missing.call();</script></body>\n' >"$scratch/broken.html"
printf '<svg xmlns="http://www.w3.org/2000/svg"><rect width="3"></svg' >"$scratch/broken.svg"
for broken in "$scratch/broken.html" "$scratch/broken.svg"; do
  if [ -z "$(verdict "$broken")" ]; then
    echo "check-in-chromium: a broken file ($(basename "$broken")) passed: the check cannot fail" >&2
    exit 1
  fi
done

checked=0
failed=0
while IFS= read -r -d '' file; do
  why="$(verdict "$file")"
  checked=$((checked + 1))
  if [ -n "$why" ]; then
    echo "FAIL $file: $why" >&2
    failed=$((failed + 1))
  fi
done < <(find "$@" \( -name '*.html' -o -name '*.svg' \) -type f -print0 | sort -z)

if [ "$checked" -eq 0 ]; then
  echo "check-in-chromium: no .html or .svg file under $*" >&2
  exit 1
fi
echo "check-in-chromium: $checked file(s) opened in $("$chromium" --version 2>/dev/null | head -1): $((checked - failed)) loaded and drew, $failed failed"
[ "$failed" -eq 0 ]
