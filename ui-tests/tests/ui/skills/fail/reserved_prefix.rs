/// A `metadata` key under the prefix reserved for MCP extensions.
fn main() {
    let _ = presa::skills!("skill-sets/reserved-prefix");
}
