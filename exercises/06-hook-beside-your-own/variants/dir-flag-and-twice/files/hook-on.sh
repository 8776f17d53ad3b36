#!/bin/sh
set -e
cd "$(dirname "$0")"
kit -C . hook install
