using Microsoft.Extensions.AI.Evaluation;
using Microsoft.Extensions.AI.Evaluation.Reporting;
using Microsoft.Extensions.AI.Evaluation.Reporting.Storage;

namespace Evals;

// The committed cache and the run's results in two storage roots. DiskBasedReportingConfiguration
// .Create would give one root to both, and every run would then write results/ into the cache.
public static class EvalStorage
{
    // A TTL far beyond any release cycle: MEAI deletes an expired entry on read and calls the model.
    private static readonly TimeSpan CacheTtl = TimeSpan.FromDays(3650);

    public static ReportingConfiguration Create(
        IEnumerable<IEvaluator> evaluators, ChatConfiguration chatConfiguration)
    {
        string repo = RepositoryRoot();
        return new ReportingConfiguration(
            evaluators,
            resultStore: new DiskBasedResultStore(Path.Combine(repo, "eval-results")),
            chatConfiguration: chatConfiguration,
            responseCacheProvider: new DiskBasedResponseCacheProvider(
                Path.Combine(repo, "eval-cache"), timeToLiveForCacheEntries: CacheTtl));
    }

    // `dotnet test` runs in bin/<configuration>/<framework>/: walk up to the repository.
    private static string RepositoryRoot()
    {
        var directory = new DirectoryInfo(AppContext.BaseDirectory);
        while (directory is not null && !Directory.Exists(Path.Combine(directory.FullName, ".git")))
        {
            directory = directory.Parent;
        }

        return directory?.FullName
            ?? throw new InvalidOperationException("not inside a git repository");
    }
}
