/// A variable misspelt: the template's `{note_id}` and the parameter `note_idd` each get
/// an error naming the other.
#[presa::resource(uri = "notes://{note_id}")]
async fn note(note_idd: String) -> String {
    note_idd
}

/// Two variables, one misspelt, beside an injected parameter far from both names.
#[presa::resource(uri = "files://{dir}/{nmae}")]
async fn file(dir: String, name: String, ctx: presa::RequestContext) -> String {
    let _ = ctx;
    dir + &name
}

fn main() {}
