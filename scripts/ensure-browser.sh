#!/usr/bin/env bash
# Make sure the Debian packages the tests drive are installed: chromium and chromium-driver for the
# console's browser tests (tests/system/test_console_browser.py), faketime for the clock-skewed
# replica (tests/system/test_replicas.py). Installs them with apt-get when missing (as root: CI
# runs as root). Nothing is downloaded from outside the Debian archive: no browser builds, no drivers.
# Not root and missing: says so and exits 0; the browser tests then skip, naming this script.
set -euo pipefail

need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
command -v faketime >/dev/null 2>&1 || need+=(faketime)
if [ "${#need[@]}" -eq 0 ]; then
    echo "ensure-browser: $(chromium --version 2>/dev/null) and faketime already installed"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "ensure-browser: ${need[*]} missing and not root; the console's browser tests will" \
         "skip (install with: sudo apt-get install ${need[*]})" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" fonts-dejavu-core >/dev/null
echo "ensure-browser: installed ${need[*]}: $(chromium --version 2>/dev/null)"
