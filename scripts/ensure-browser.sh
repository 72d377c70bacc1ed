#!/usr/bin/env bash
# Make sure Debian's chromium and chromium-driver are installed, for the console's browser tests
# (tests/test_console_browser.py). Installs them with apt-get when missing; needs root (CI runs as
# root). Downloads nothing else: no browser builds from outside the package registry.
set -euo pipefail

need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
if [ "${#need[@]}" -eq 0 ]; then
    echo "ensure-browser: $(chromium --version 2>/dev/null || echo chromium) already installed"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "ensure-browser: ${need[*]} missing; run as root (or: sudo apt-get install ${need[*]})" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" fonts-dejavu-core >/dev/null
echo "ensure-browser: installed ${need[*]}: $(chromium --version)"
