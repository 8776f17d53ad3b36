#!/bin/sh
kit hook install
