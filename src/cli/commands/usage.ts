import type { Command } from "commander";
import { stringify } from "csv-stringify/sync";
import { ServiceError, type Usage, type UsagePeriod } from "../../api/index.js";
import { UsageError } from "../../common/index.js";
import { type CliContext, useColor, writeJson, writeLine } from "../context.js";
import {
	createStyle,
	formatNumber,
	formatTable,
	MB_PER_GB,
	MB_PER_TB,
	productName,
	renderBarChart,
	type Style,
	terminalColumns,
} from "../format/index.js";
import { answeringErrorsInJson } from "../json-error.js";
import { addServiceOptions, connectService, requireAccount, type ServiceFlags } from "../service-connection.js";

export interface UsageFlags extends ServiceFlags {
	product: string;
	period?: string;
	json?: boolean;
	csv?: boolean;
}

/** One bucket of the usage series, figures in MB. */
export interface UsageBucket {
	/** The service's bucket key, `YYYY-MM-DD HH:MM`. */
	readonly bucket: string;
	readonly defaultMb: number | undefined;
	readonly extraMb: number | undefined;
	readonly totalMb: number;
}

/** Columns of `usage --csv`, declared once here rather than taken from the data. */
export const USAGE_CSV_COLUMNS = ["bucket", "default_mb", "extra_mb", "total_mb"] as const;

export function registerUsageCommand(program: Command, ctx: CliContext): void {
	const command = program
		.command("usage")
		.description("bandwidth usage of one proxy product, as a table and a bar chart")
		.requiredOption("--product <code>", "product code: rp, rpc, dcp, mp or sdc")
		.option("--period <period>", "24h (hourly buckets), 3d or 7d (daily buckets); the service's default is 3d")
		.option("--json", "print the usage record as the service returned it")
		.option("--csv", `print the buckets as CSV (${USAGE_CSV_COLUMNS.join(", ")})`);
	addServiceOptions(command);
	command.addHelpText(
		"after",
		`
Reads GET /public/usage. Figures are in MB (1 GB = 1,000 MB, 1 TB = 1,000,000 MB). The chart fits the
terminal's width (80 columns when output is not a terminal). The product and period are checked by the
service, whose message is shown (exit 2); a personal key on an account whose e-mail is not verified
gets 403 (exit 3).

Examples:
  npx scrapejob usage --product rp
  npx scrapejob usage --product rpc --period 24h --csv > usage.csv`,
	);
	command.action((flags: UsageFlags) =>
		answeringErrorsInJson(ctx, flags.json === true, async () => {
			await runUsage(ctx, flags);
		}),
	);
}

export async function runUsage(ctx: CliContext, flags: UsageFlags): Promise<void> {
	if (flags.json && flags.csv) throw new UsageError("--json and --csv are exclusive: choose one export format");
	const connection = await connectService(ctx, flags);
	try {
		const account = requireAccount(connection);
		let usage: Usage;
		try {
			// Product and period go as given: the service's lists disagree with its docs (dcp vs sdc,
			// docs/service.md, "Account endpoints"), so the service is the judge and its message is what the user sees.
			usage = await account.usage(
				{ product: flags.product, ...(flags.period !== undefined ? { period: flags.period as UsagePeriod } : {}) },
				ctx.signal,
			);
		} catch (error) {
			if (error instanceof ServiceError && error.status === 403) {
				writeLine(ctx.stderr, "hint: usage with a personal key needs the account's e-mail address to be verified");
			}
			throw error;
		}
		if (flags.json) {
			writeJson(ctx.stdout, usage);
			return;
		}
		const buckets = usageBuckets(usage, flags.product);
		if (flags.csv) {
			ctx.stdout.write(
				stringify(
					buckets.map((bucket) => [bucket.bucket, bucket.defaultMb ?? "", bucket.extraMb ?? "", bucket.totalMb]),
					{ header: true, columns: [...USAGE_CSV_COLUMNS] },
				),
			);
			return;
		}
		const style = createStyle(useColor(ctx, ctx.stdout));
		for (const line of describeUsage(usage, buckets, flags.product, terminalColumns(ctx.stdout), style)) {
			writeLine(ctx.stdout, line);
		}
	} finally {
		await connection.close();
	}
}

type UsageProduct = Usage["data"]["bandwidth"]["products"][number];

function usageProduct(usage: Usage, productCode: string): UsageProduct | undefined {
	const products = usage.data.bandwidth.products;
	return products.find((entry) => entry.code === productCode) ?? products[0];
}

/** The requested product's buckets in time order (the list holds only that product, docs/service.md, "Account endpoints"; matched by code to be safe). */
export function usageBuckets(usage: Usage, productCode: string): UsageBucket[] {
	const product = usageProduct(usage, productCode);
	if (!product) return [];
	return Object.entries(product.stats)
		.sort(([a], [b]) => a.localeCompare(b))
		.map(([bucket, figures]) => ({
			bucket,
			defaultMb: figures.default,
			extraMb: figures.extra,
			totalMb: figures.total,
		}));
}

/** Daily buckets are all keyed at 00:00; the time then says nothing and only costs width. */
function bucketLabels(buckets: readonly UsageBucket[]): string[] {
	const daily = buckets.length > 0 && buckets.every((bucket) => bucket.bucket.endsWith(" 00:00"));
	return buckets.map((bucket) => (daily ? bucket.bucket.slice(0, -" 00:00".length) : bucket.bucket));
}

function mb(value: number | undefined): string {
	return value === undefined ? "" : formatNumber(value);
}

/** Totals in MB, GB and TB: the service's own figures when it sent them, else derived with its units. */
export function usageTotals(
	usage: Usage,
	productCode: string,
	buckets: readonly UsageBucket[],
): { mb: number; gb: number; tb: number } {
	const product = usageProduct(usage, productCode);
	const totalMb =
		usage.meta.total_bandwidth_mb ??
		product?.totalBandwidth ??
		buckets.reduce((sum, bucket) => sum + bucket.totalMb, 0);
	return {
		mb: totalMb,
		gb: usage.meta.total_bandwidth_gb ?? totalMb / MB_PER_GB,
		tb: usage.meta.total_bandwidth_tb ?? totalMb / MB_PER_TB,
	};
}

export function describeUsage(
	usage: Usage,
	buckets: readonly UsageBucket[],
	productCode: string,
	widthColumns: number,
	style: Style,
): string[] {
	const product = usageProduct(usage, productCode);
	const meta = usage.meta;
	const name = product?.name ?? productName(productCode);
	const lines = [style.bold(`Bandwidth usage: ${name} (${product?.code ?? productCode}), period ${meta.period}`)];
	const info: Array<[string, string | undefined]> = [
		["granularity", meta.granularity],
		["duration", meta.duration],
		["scope", meta.ownership_scope],
		["key type", meta.auth_type],
		["proxy username", meta.proxy_username],
		["unit", meta.bandwidth_unit],
	];
	const present = info.filter((pair): pair is [string, string] => pair[1] !== undefined && pair[1] !== "");
	const width = Math.max(0, ...present.map(([label]) => label.length));
	for (const [label, value] of present) lines.push(`  ${label.padEnd(width)}  ${value}`);

	const totals = usageTotals(usage, productCode, buckets);
	lines.push(
		"",
		`${style.bold("Total")}  ${formatNumber(totals.mb)} MB = ${formatNumber(totals.gb, 3)} GB = ${formatNumber(totals.tb, 6)} TB`,
	);
	if (buckets.length === 0) {
		lines.push("", "No usage buckets in this period.");
		return lines;
	}
	const labels = bucketLabels(buckets);
	const hasSplit = buckets.some((bucket) => bucket.defaultMb !== undefined || bucket.extraMb !== undefined);
	lines.push(
		"",
		...formatTable(
			[
				{ header: "bucket" },
				...(hasSplit
					? [
							{ header: "default MB", align: "right" as const },
							{ header: "extra MB", align: "right" as const },
						]
					: []),
				{ header: "total MB", align: "right" },
			],
			buckets.map((bucket, index) => [
				labels[index] ?? bucket.bucket,
				...(hasSplit ? [mb(bucket.defaultMb), mb(bucket.extraMb)] : []),
				mb(bucket.totalMb),
			]),
			{ style },
		),
	);
	lines.push(
		"",
		...renderBarChart(
			buckets.map((bucket, index) => ({ label: labels[index] ?? bucket.bucket, value: bucket.totalMb })),
			{ widthColumns, formatValue: (value) => `${formatNumber(value)} MB`, style },
		),
	);
	return lines;
}
