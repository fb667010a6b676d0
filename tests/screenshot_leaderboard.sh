#!/usr/bin/env bash
# Screenshot a leaderboard HTML page with headless Chromium (Debian's package: apt-get install
# -y chromium), to check by eye that the page shows its tables and plots.
#   tests/screenshot_leaderboard.sh multirun/<date>/<time>/leaderboard/leaderboard.html [out.png] [width] [height]
# Writes out.png (default: leaderboard.png beside the page). Exits 3 if Chromium is missing.
# The page is checked at 1400 and 800 px wide: run it once with each width. A table wider
# than the window scrolls inside its own box (the page never does); the screenshot shows the
# line above such a table that says so, and its left part.
set -euo pipefail
page="${1:?usage: $0 PAGE.html [OUT.png] [WIDTH] [HEIGHT]}"
out="${2:-$(dirname "$page")/leaderboard.png}"
width="${3:-1400}"
height="${4:-2600}"
browser="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [ -z "$browser" ]; then
  echo "no Chromium found: apt-get install -y chromium (Debian) to take the screenshot" >&2
  exit 3
fi
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
# The page is self-contained (plots are embedded), so no network is needed or used.
"$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
  --user-data-dir="$profile" --window-size="${width},${height}" \
  --screenshot="$(realpath -m "$out")" "file://$(realpath "$page")" 2>/dev/null
test -s "$out"
echo "$out"
