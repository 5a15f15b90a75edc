import { resolve } from "node:path";
import { type Command, InvalidArgumentError } from "commander";
import { EXPORT_FORMATS, type ExportFormat, exportLatest, openJobHistory } from "../../history/index.js";
import { formatProblem, JobValidationError, loadJob } from "../../job/index.js";
import { csvColumnsFor, jobOutputDir } from "../../output/index.js";
import { UsageError } from "../../shared/index.js";
import { type CliContext, writeLine } from "../context.js";
import { EXIT } from "../exit-codes.js";

function format(value: string): ExportFormat {
	if (!(EXPORT_FORMATS as readonly string[]).includes(value)) {
		throw new InvalidArgumentError(
			`--format must be one of ${EXPORT_FORMATS.join(", ")}, got ${JSON.stringify(value)}`,
		);
	}
	return value as ExportFormat;
}

export function registerExportCommand(program: Command, ctx: CliContext): void {
	program
		.command("export")
		.description("write the newest ok record of every target across a job's runs to one file")
		.argument("<job>", "the job file (its name finds output/<job>/)")
		.requiredOption("--latest", "the newest ok record per target (the only selection there is)")
		.requiredOption("--out <file>", "the file to write")
		.option("--format <format>", `${EXPORT_FORMATS.join(" | ")}`, format, "csv")
		.option("--from <dir>", "root folder of results (as run --out)", "output")
		.option("--json", "print {records, format, out} as JSON")
		.addHelpText(
			"after",
			`
Reads the job's history (output/<job>/.history, rebuilt from the run folders when missing) and each
target's newest ok record from its run's results.jsonl. csv has the runs' columns (extracted fields
included); jsonl the records as written (without inline content); parquet and sqlite (table latest)
have id, url, http_status, finished_at, content_hash, credits_used and a column per extracted (and
carried) field: a number column when every value is a number, text otherwise. The file is written
under a temporary name and renamed when complete. sqlite builds the database in memory (about 600 MB
at a million records): export very large jobs as parquet or csv.

Examples:
  scrapejob export jobs/shop.yaml --latest --format parquet --out shop-latest.parquet
  sqlite3 shop.db 'select url, price from latest'   # after --format sqlite --out shop.db`,
		)
		.action(async (jobFile: string, flags: { out: string; format: ExportFormat; from: string; json?: boolean }) => {
			let job: Awaited<ReturnType<typeof loadJob>>["job"];
			try {
				({ job } = await loadJob(resolve(ctx.cwd, jobFile), { env: ctx.env, cwd: ctx.cwd, checkSources: false }));
			} catch (error) {
				if (!(error instanceof JobValidationError)) throw error;
				for (const problem of error.problems) writeLine(ctx.stderr, formatProblem(problem));
				ctx.exitCode = EXIT.invalidInput;
				return;
			}
			const jobDir = jobOutputDir(resolve(ctx.cwd, flags.from), job.name);
			const out = resolve(ctx.cwd, flags.out);
			const history = openJobHistory(jobDir);
			let records: number;
			try {
				if (history.size === 0)
					throw new UsageError(`no records of job ${job.name} under ${jobDir}: nothing to export`);
				const columns = csvColumnsFor({ data: job.extraction?.dataColumns, carry: job.extraction?.carry });
				records = await exportLatest(history, flags.format, out, columns);
			} finally {
				history.close();
			}
			if (flags.json) writeLine(ctx.stdout, JSON.stringify({ records, format: flags.format, out }));
			else writeLine(ctx.stdout, `${records} records (the newest ok one of each target) → ${out}`);
		});
}
