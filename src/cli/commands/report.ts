import type { Command } from "commander";
import { rebuildReport } from "../../report/index.js";
import { type CliContext, writeLine } from "../context.js";
import { answeringErrorsInJson } from "../json-error.js";

export function registerReportCommand(program: Command, ctx: CliContext): void {
	program
		.command("report")
		.description("rebuild report.html of run folders from their files")
		.argument("<run-dir...>", "run folders (output/<job>/<run-id>/, or a merged folder)")
		.option("--json", "print [{run_dir, report}] as JSON")
		.addHelpText(
			"after",
			`
Every run writes report.html into its folder when it ends (also when it was interrupted): one
self-contained page, charts included, that opens offline in any browser. This command writes it
again from the folder's summary.json, results.jsonl and run.log — for runs made before reports
existed, merged shard folders, or after editing nothing but wanting a fresh copy.

Examples:
  npx scrapejob report output/shop-prices/20261122T021500Z-3f9a1c
  npx scrapejob report output/shop-prices/*/`,
		)
		.action((runDirs: string[], flags: { json?: boolean }) =>
			answeringErrorsInJson(ctx, flags.json === true, async () => {
				const written: Array<{ run_dir: string; report: string }> = [];
				for (const runDir of runDirs) written.push({ run_dir: runDir, report: await rebuildReport(runDir) });
				if (flags.json) writeLine(ctx.stdout, JSON.stringify(written));
				else for (const entry of written) writeLine(ctx.stdout, entry.report);
			}),
		);
}
