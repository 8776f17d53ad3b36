#!/bin/sh
kit hook install --uninstall
