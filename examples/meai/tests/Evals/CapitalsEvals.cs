using Microsoft.Extensions.AI;
using Microsoft.Extensions.AI.Evaluation;
using Microsoft.Extensions.AI.Evaluation.Reporting;
using Xunit;

namespace Evals;

// Names checked against Microsoft.Extensions.AI.Evaluation 10.9.0's source. OpenAI's ChatClient is
// written in full: `using OpenAI.Chat;` would make ChatMessage ambiguous.
// One scenario of the committed cache (eval-cache/cache/Geography.Capitals/1/<key>/). Offline, the
// answer comes from the cache and no request reaches the model; a miss would call it, which
// `cachelint guard -- dotnet test` reports as an added entry.
public class CapitalsEvals
{
    // The model id is part of the cache key (ChatClientMetadata.DefaultModelId): keep it fixed.
    private static IChatClient Model() =>
        new OpenAI.Chat.ChatClient(
            "gpt-4o-mini",
            Environment.GetEnvironmentVariable("OPENAI_API_KEY") ?? "offline-replay-needs-no-key")
        .AsIChatClient();

    [Fact]
    public async Task CapitalOfFrance()
    {
        ReportingConfiguration configuration =
            EvalStorage.Create(evaluators: [], new ChatConfiguration(Model()));
        await using ScenarioRun run =
            await configuration.CreateScenarioRunAsync("Geography.Capitals", iterationName: "1");

        List<ChatMessage> messages = [new(ChatRole.User, "What is the capital of France?")];
        ChatResponse response = await run.ChatConfiguration!.ChatClient.GetResponseAsync(messages);
        await run.EvaluateAsync(messages, response);

        // Only deterministic assertions gate; LLM-judge scores belong in the report.
        Assert.Contains("Paris", response.Text);
    }
}
