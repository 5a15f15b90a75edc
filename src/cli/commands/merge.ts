import { resolve } from "node:path";
import type { Command } from "commander";
import { cliCommand } from "../../common/index.js";
import { runSucceeded } from "../../library/index.js";
import { formatSummary } from "../../output/index.js";
import { rebuildReport } from "../../report/index.js";
import { mergeShardRuns } from "../../run/index.js";
import { type CliContext, writeLine } from "../context.js";
import { EXIT } from "../exit-codes.js";
import { answeringErrorsInJson } from "../json-error.js";

export function registerMergeCommand(program: Command, ctx: CliContext): void {
	program
		.command("merge")
		.description("merge the run folders of a sharded job's shards into one results.jsonl, results.csv and summary")
		.argument(
			"<run-dirs...>",
			"shard run folders (output/<job>/<run-id>-shard-I-of-N/), or a job folder (output/<job>/): the newest run of each shard",
		)
		.requiredOption(
			"--out <dir>",
			"folder to write the merged results into (new, empty, or an earlier merge of the job, replaced)",
		)
		.option("--json", "print the merged summary as JSON (with out_dir and report)")
		.addHelpText(
			"after",
			`
Each shard of \`run --shard I/N\` writes its own run folder. merge checks that the folders are shards
of one job (same name, same targets, same N) with no shard twice, then writes every target's record
exactly once (a target with records in two shards is refused), credits summed, and report.html.
Missing or unfinished shards are allowed: the summary says incomplete and names them (exit 1),
with the command that finishes each; a shard still running is named as such (merge again once it ends).

Exit codes: 0 complete, every target ok · 1 incomplete, some targets failed, or a required field filled
below min_fill · 2 refused (nothing written)

A job folder stands for the newest run of each shard of its newest layout: after the second night,
output/<job>/*-shard-*-of-N names both nights' folders (the same shard twice, refused). A shard that
missed the latest night (its newest run ran beside an older run of another shard) is refused too.

Examples:
  npx scrapejob merge output/shop-prices --out merged/shop-prices-2026-11-22
  npx scrapejob merge output/shop-prices/*-shard-*-of-4 --out merged/shop-prices-first`,
		)
		.action((dirs: string[], flags: { out: string; json?: boolean }) =>
			answeringErrorsInJson(ctx, flags.json === true, async () => {
				const outDir = resolve(ctx.cwd, flags.out);
				const { summary, finishCommands } = await mergeShardRuns(
					dirs.map((dir) => resolve(ctx.cwd, dir)),
					outDir,
					{ cwd: ctx.cwd },
				);
				const report = await rebuildReport(outDir).catch(() => null);
				if (flags.json) writeLine(ctx.stdout, JSON.stringify({ ...summary, out_dir: outDir, report }));
				else {
					const { shards } = summary;
					// Then merge again (with the new shards' folders); `;`, not `&&`: one shard's failures stop no other.
					// Shards still running have nothing to resume: once they end, this same merge finishes the layout.
					const mergeAgain = cliCommand(["merge", ...dirs, "--out", flags.out]);
					const finish = finishCommands.length > 0 ? finishCommands.join("; ") : mergeAgain;
					ctx.stdout.write(formatSummary(summary, outDir, { resume: finish }));
					if (shards.running.length > 0)
						writeLine(
							ctx.stdout,
							`running    ${shards.running.length === 1 ? "shard" : "shards"} ${shards.running.join(", ")} still running: once ${shards.running.length === 1 ? "it has" : "they have"} ended, \`${mergeAgain}\` merges again`,
						);
					writeLine(
						ctx.stdout,
						`shards     ${shards.merged.length} of ${shards.count} merged${shards.missing.length ? `; missing ${shards.missing.join(", ")}` : ""}${shards.incomplete.length ? `; incomplete ${shards.incomplete.join(", ")}` : ""}`,
					);
					if (report) writeLine(ctx.stdout, `report     ${report}`);
				}
				// The rule a run's own exit code follows: complete, every target ok, the required fields filled enough.
				ctx.exitCode = runSucceeded({ summary, stopReason: null }) ? EXIT.ok : EXIT.someTargetsFailed;
			}),
		);
}
