for s in a b c d e; do echo "$s agrees with kit cache"; done
