#!/usr/bin/env bash
# check_config_doc.sh OMPC_CONFIG README: the README's table between the
# markers <!-- config-table --> and <!-- /config-table --> must equal the
# output of `ompc-config --markdown`.
set -eu
tool=$1 readme=$2
want=$("$tool" --markdown)
have=$(sed -n '/<!-- config-table -->/,/<!-- \/config-table -->/p' "$readme" | sed '1d;$d')
if [ "$want" != "$have" ]; then
  echo "README configuration table is out of date; regenerate it with:"
  echo "  build/bin/ompc-config --markdown"
  diff <(echo "$want") <(echo "$have") || true
  exit 1
fi
echo "config table matches ($(echo "$want" | wc -l) lines)"
