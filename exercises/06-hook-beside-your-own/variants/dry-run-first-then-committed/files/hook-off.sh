#!/bin/sh
kit hook install --dry-run --uninstall
kit hook install --uninstall
