/// A list is not a prompt argument.
#[presa::prompt]
async fn review(files: Vec<String>) -> String {
    files.join(",")
}

fn main() {}
