//! The fixture's prompts (wire reference section 16.3), declared with `#[prompt]`.

use crate::tools::PNG;
use presa::{
    Completion, CompletionRequest, Content, Error, GetPromptResult, PromptMessage,
    ResourceContents, ServerBuilder,
};

pub(crate) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .add::<test_simple_prompt>()
        .add::<test_prompt_with_arguments>()
        .add::<test_prompt_with_embedded_resource>()
        .add::<test_prompt_with_image>()
}

/// A prompt without arguments.
#[presa::prompt]
async fn test_simple_prompt() -> Vec<PromptMessage> {
    vec![PromptMessage::user("This is a simple prompt for testing.")]
}

/// A prompt with two required arguments.
#[presa::prompt(complete(arg1 = complete_arg1))]
async fn test_prompt_with_arguments(
    #[arg(description = "First argument")] arg1: String,
    #[arg(description = "Second argument")] arg2: String,
) -> Vec<PromptMessage> {
    vec![PromptMessage::user(format!(
        "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
    ))]
}

async fn complete_arg1(req: CompletionRequest) -> Result<Completion, Error> {
    let options = ["paris", "park", "test", "testing", "value"];
    let prefix = req.value.to_lowercase();
    Ok(Completion::new(
        options.iter().filter(|o| o.starts_with(&prefix)).copied(),
    ))
}

/// A prompt embedding a resource.
#[presa::prompt]
async fn test_prompt_with_embedded_resource(
    #[arg(rename = "resourceUri", description = "The URI to embed")] resource_uri: String,
) -> GetPromptResult {
    GetPromptResult::new([
        PromptMessage::user(Content::resource(
            ResourceContents::text(resource_uri, "This is embedded resource content.")
                .mime_type("text/plain"),
        )),
        PromptMessage::user("Please process the embedded resource above."),
    ])
    .description("Embedded resource prompt")
}

/// A prompt with an image.
#[presa::prompt]
async fn test_prompt_with_image() -> Vec<PromptMessage> {
    vec![
        PromptMessage::user(Content::image_base64(PNG, "image/png")),
        PromptMessage::user("Please analyze the image above."),
    ]
}
