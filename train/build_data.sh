#!/bin/sh
# Rebuild the converted training data from pinned commits of its public sources.
# Usage: train/build_data.sh DIR, where DIR holds (or will hold) the clones:
#   DIR/Seal-Tools (github.com/fairyshine/Seal-Tools), DIR/gorilla (github.com/ShishirPatil/gorilla)
#   DIR/DAMO-ConvAI (github.com/AlibabaResearch/DAMO-ConvAI, for API-Bank) and DIR/ToolAlpaca
#   (github.com/tangqiaoyu/ToolAlpaca); for the sources only the `d` variant trains on,
#   DIR/StableToolBench (github.com/THUNLP-MT/StableToolBench) and DIR/NESTFUL
#   (github.com/IBM/NESTFUL).
# Each converter checks out nothing: it reads its files at the commit pinned in convert.py.
set -eu
dir=${1:?usage: train/build_data.sh DIR}
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
mkdir -p "$dir"
[ -d "$dir/Seal-Tools" ] || git clone --quiet https://github.com/fairyshine/Seal-Tools "$dir/Seal-Tools"
[ -d "$dir/gorilla" ] || git clone --quiet https://github.com/ShishirPatil/gorilla "$dir/gorilla"
[ -d "$dir/DAMO-ConvAI" ] || git clone --quiet https://github.com/AlibabaResearch/DAMO-ConvAI "$dir/DAMO-ConvAI"
[ -d "$dir/ToolAlpaca" ] || git clone --quiet https://github.com/tangqiaoyu/ToolAlpaca "$dir/ToolAlpaca"
[ -d "$dir/StableToolBench" ] || git clone --quiet https://github.com/THUNLP-MT/StableToolBench "$dir/StableToolBench"
[ -d "$dir/NESTFUL" ] || git clone --quiet https://github.com/IBM/NESTFUL "$dir/NESTFUL"
"$python" "$here/data/sealtools/convert.py" --repo "$dir/Seal-Tools"
"$python" "$here/data/bfcl/convert.py" --repo "$dir/gorilla"
"$python" "$here/data/apibank/convert.py" --repo "$dir/DAMO-ConvAI"
"$python" "$here/data/toolalpaca/convert.py" --repo "$dir/ToolAlpaca"
"$python" "$here/data/bfclturns/convert.py" --repo "$dir/gorilla"
"$python" "$here/data/stabletoolbench/convert.py" --repo "$dir/StableToolBench"
"$python" "$here/data/nestful/convert.py" --repo "$dir/NESTFUL"
# Drop training requests that repeat evaluation requests; list cross-catalog repeats.
"$python" "$here/data/overlap.py"
