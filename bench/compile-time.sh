#!/usr/bin/env bash
# Measures what presa's attributes cost at compile time: a generated crate with 200
# `#[presa::tool]` functions of varied signatures, against the same crate with the
# attributes removed (same functions, same dependencies). Prints the median build time of
# each (only the crate itself is rebuilt; dependencies are built once beforehand) and the
# ratio. Usage: bench/compile-time.sh [runs=3]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS="${1:-3}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

gen() { # gen DIR WITH_ATTRS(0|1)
  local dir="$1" attrs="$2"
  mkdir -p "$dir/src"
  cat > "$dir/Cargo.toml" <<TOML
[package]
name = "$(basename "$dir")"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
presa = { path = "$ROOT/presa" }
serde = { version = "1", features = ["derive"] }
schemars = "1"
tokio = { version = "1", features = ["rt-multi-thread", "macros"] }

[workspace]
TOML
  {
    echo '#![allow(dead_code, unused_variables)]'
    echo 'use presa::{Json, RequestContext, ToolError};'
    echo '#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]'
    echo 'pub struct Item { pub id: u64, pub name: String, pub tags: Vec<String> }'
    for i in $(seq 1 200); do
      local attr=""
      [ "$attrs" = 1 ] && attr="#[presa::tool]"
      echo "/// Tool number $i."
      case $((i % 5)) in
        0) echo "$attr pub async fn t$i(a: i64, b: i64) -> i64 { a + b + $i }" ;;
        1) echo "$attr pub async fn t$i(name: String, count: Option<u32>) -> String { format!(\"{name}{count:?}$i\") }" ;;
        2) echo "$attr pub async fn t$i(item: Item, ctx: RequestContext) -> Json<Item> { Json(item) }" ;;
        3) echo "$attr pub async fn t$i(tags: Vec<String>, flag: bool) -> Result<String, ToolError> { if flag { Ok(tags.join(\",\")) } else { Err(ToolError::new(\"no\")) } }" ;;
        4) echo "$attr pub fn t$i(x: f64) -> f64 { x * $i.0 }" ;;
      esac
    done
  } > "$dir/src/lib.rs"
}

gen "$WORK/with_attrs" 1
gen "$WORK/without_attrs" 0
export CARGO_TARGET_DIR="$WORK/target"
for c in with_attrs without_attrs; do
  (cd "$WORK/$c" && cargo build -q 2>/dev/null)   # dependencies, once
done

time_build() { # seconds for rebuilding only the crate
  local dir="$1"
  touch "$dir/src/lib.rs"
  local start end
  start=$(date +%s.%N)
  (cd "$dir" && cargo build -q)
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }' 
}

declare -a A B
for _ in $(seq 1 "$RUNS"); do   # alternate, so machine noise hits both alike
  A+=("$(time_build "$WORK/with_attrs")")
  B+=("$(time_build "$WORK/without_attrs")")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ma=$(median "${A[@]}"); mb=$(median "${B[@]}")
printf 'crate with 200 #[presa::tool] functions: %.2f s (runs: %s)\n' "$ma" "${A[*]}"
printf 'same crate without the attributes:      %.2f s (runs: %s)\n' "$mb" "${B[*]}"
awk -v a="$ma" -v b="$mb" 'BEGIN { printf "ratio: %.1fx\n", a / b }' 
