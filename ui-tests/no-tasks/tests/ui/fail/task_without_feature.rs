/// Runs as a task when the client declared Tasks, but presa's `tasks` feature is off.
#[presa::tool(task = "optional")]
async fn slow() -> String {
    String::new()
}

fn main() {
    let _ = presa::server!().add::<slow>();
}
