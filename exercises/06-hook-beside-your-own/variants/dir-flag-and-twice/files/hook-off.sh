#!/bin/sh
set -e
kit hook install --uninstall -C "$(dirname "$0")"
