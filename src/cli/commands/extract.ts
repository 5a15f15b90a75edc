import { basename, dirname } from "node:path";
import type { Command } from "commander";
import { cliCommand, UsageError } from "../../common/index.js";
import { extractPlanned } from "../../library/index.js";
import { formatSummary } from "../../output/index.js";
import { CorruptResultsError } from "../../run/index.js";
import { type CliContext, writeLine } from "../context.js";
import { EXIT } from "../exit-codes.js";
import { answerInvalidJob, answeringErrorsInJson } from "../json-error.js";
import { acceptCommand } from "../resume-hint.js";

interface ExtractFlags {
	run: string;
	out: string;
	json?: boolean;
	fleet?: string;
}

export function registerExtractCommand(program: Command, ctx: CliContext): void {
	program
		.command("extract")
		.description(
			"re-extract: a new run of a job read from its stored pages (content: files) with the job file's current extract:, 0 credits, nothing sent",
		)
		.argument("<job>", "the job file (its current extract: is what the pages are read with)")
		.requiredOption(
			"--run <run-id|latest>",
			"the run whose stored pages are read, or latest: every target's latest ok record",
		)
		.option("--out <dir>", "root folder of results (what run --out names): <dir>/<job>/<run-id>/", "output")
		.option("--json", "print the summary as JSON")
		.option(
			"--fleet <url>",
			"refused: re-extraction reads a local run's folder; a fleet's records are read with export --latest --fleet",
		)
		.addHelpText(
			"after",
			`
Writes a new run folder whose records are read from pages a run kept (output.content: files), with
the extract: fields the job file has now: credits_used 0 on every record, and nothing is sent to the
service. Records keep their page's fetch times; change tracking compares them with the job's previous
records (changed only where a value differs). Targets without a stored page get no record and are
listed in the run folder's missing-pages.txt (summary.json: missing_pages). The run is promoted to
latest unless it breaks the job's data contract (exit 1, contract_failed; promote it by hand with
run or export --accept RUN_ID). Every \${VAR} of the job file but healthcheck's needs to be set (the
scrape options are part of the targets' ids; notify is sent at the end).

Examples:
  npx scrapejob extract jobs/example-shop.yaml --run latest
  npx scrapejob extract jobs/example-shop.yaml --run 20261122T021500Z-3f9a1c --out /srv/scrape/output`,
		)
		.action((jobFile: string, flags: ExtractFlags) =>
			answeringErrorsInJson(ctx, flags.json === true, () => extractCommand(ctx, jobFile, flags)),
		);
}

/** `extract`: a new run folder from a run's stored pages, its summary printed (or as JSON). */
async function extractCommand(ctx: CliContext, jobFile: string, flags: ExtractFlags): Promise<void> {
	if (flags.fleet !== undefined)
		throw new UsageError(
			`extract reads a local run's stored pages: re-reading a fleet run's pages (each worker's folder <out>/<job>/fleet/<run-id>/) is not built; the fleet's records: ${cliCommand(["export", jobFile, "--latest", "--fleet", "$SCRAPEJOB_FLEET_URL"]).replace("'$SCRAPEJOB_FLEET_URL'", '"$SCRAPEJOB_FLEET_URL"')} --out latest.csv`,
		);
	// Stopped, a re-extraction is run again (it is not resumed): the same command, pasteable.
	const out = flags.out === "output" ? [] : ["--out", flags.out];
	const again = cliCommand(["extract", jobFile, "--run", flags.run, ...out]);
	// A second Ctrl-C ends the process at once (bin.ts): its line says how to run it again.
	const removeLastWord = ctx.lastWords?.add(() => `run it again with \`${again}\``);
	let outcome: Awaited<ReturnType<typeof extractPlanned>>;
	try {
		outcome = await extractPlanned(jobFile, {
			run: flags.run,
			out: flags.out,
			cwd: ctx.cwd,
			env: ctx.env,
			signal: ctx.signal,
			...(ctx.lastWords ? { lastWords: ctx.lastWords } : {}),
		});
	} catch (error) {
		if (error instanceof CorruptResultsError) {
			// The source run's records were damaged: the command that repairs that run, as it must be pasted.
			const runId = basename(dirname(error.path));
			throw error.withRepair(cliCommand(["run", jobFile, ...out, "--resume", runId, "--repair"]));
		}
		answerInvalidJob(ctx, flags.json === true, error);
		return;
	} finally {
		removeLastWord?.();
	}
	const { summary, runDir, reportPath } = outcome;
	if (flags.json) writeLine(ctx.stdout, JSON.stringify({ ...summary, run_dir: runDir, report: reportPath }));
	else {
		// A held re-extraction is promoted as any held run is: `--accept` with its folder's name.
		const accept = acceptCommand(jobFile, summary.job, flags.out, runDir);
		ctx.stdout.write(formatSummary(summary, runDir, { resume: again, accept }));
		if (reportPath) writeLine(ctx.stdout, `report     ${reportPath}`);
	}
	ctx.exitCode = extractExitCode(outcome);
	// Said even with --json, as `run` says them: a full disk or a lost lock is what the cron mail must tell.
	if (outcome.stopReason === "output_failed" || outcome.stopReason === "lease_lost")
		writeLine(ctx.stderr, `scrapejob: ${outcome.stopMessage ?? outcome.stopReason}`);
}

/**
 * 0: every page read and the contract kept · 1: a page failed or the contract broke · 4: the lease was
 * lost · 5: the output could not be written · 130: stopped. The same codes as `run` for the same stops.
 */
function extractExitCode(outcome: Awaited<ReturnType<typeof extractPlanned>>): number {
	switch (outcome.stopReason) {
		case "interrupted":
			return EXIT.interrupted;
		case "output_failed":
			return EXIT.outputFailed;
		case "lease_lost":
			return EXIT.lockHeld;
		case null:
			return outcome.summary.targets.by_status.failed > 0 ? EXIT.someTargetsFailed : EXIT.ok;
		default:
			return EXIT.someTargetsFailed;
	}
}
