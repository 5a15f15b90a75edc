import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { checkOptions, didYouMean, type OptionKinds, parseBaseUrl, UsageError } from "../common/index.js";

/** Environment variables of the product contract (docs/reference/environment.md). */
export const CONFIG_VARIABLES = [
	"SCRAPEJOB_ACCOUNT_KEY",
	"SCRAPEJOB_SCRAPER_KEY",
	"SCRAPEJOB_API_URL",
	"SCRAPEJOB_SCRAPER_URL",
	"SCRAPEJOB_FLEET_URL",
	"SCRAPEJOB_FLEET_SCHEMA",
] as const;
export type ConfigVariable = (typeof CONFIG_VARIABLES)[number];

/** What `resolveConfig` takes from the command line (the flags win over the environment and the config file). */
export interface ConfigFlags {
	/** `--config FILE`: KEY=VALUE lines setting the variables above (lowest precedence). */
	readonly config?: string;
	readonly apiUrl?: string;
	readonly scraperUrl?: string;
	/** `--fleet URL`: the fleet's PostgreSQL. */
	readonly fleet?: string;
}

/** The keys and addresses a run uses, resolved from flags, environment and the config file. */
export interface ResolvedConfig {
	/** Sent as `x-apikey` to the account endpoints. */
	readonly accountKey: string | undefined;
	/** When set, the account look-up is skipped and concurrency is learned from `X-RateLimit-Limit`. */
	readonly scraperKey: string | undefined;
	/** Account base address, checked (https, or http on loopback only). */
	readonly apiUrl: string | undefined;
	/** Scraper base address; when unset, the account's `endpoint_url` (or the public default) is used. */
	readonly scraperUrl: string | undefined;
	/** `run --fleet`: the fleet's PostgreSQL (`postgres://…`), a secret like the keys. */
	readonly fleetUrl: string | undefined;
	/** The schema of the fleet's tables. @default "scrapejob" (applied where the fleet connects) */
	readonly fleetSchema: string | undefined;
	/** Where each value came from, for `--help`-style diagnostics; never holds the values. */
	readonly sources: Readonly<Partial<Record<ConfigVariable, "flag" | "env" | "config">>>;
}

/**
 * Read a `--config` file: `KEY=VALUE` lines, `#` comments (whole lines, or after a space), optional
 * `export ` and quotes (the dotenv shape, so one file serves both a shell and scrapejob). Only the contract's variables are allowed.
 */
export async function readConfigFile(path: string): Promise<Partial<Record<ConfigVariable, string>>> {
	let text: string;
	try {
		text = await readFile(path, "utf8");
	} catch (error) {
		const code = (error as NodeJS.ErrnoException).code;
		throw new UsageError(
			`cannot read config file ${path}: ${code === "ENOENT" ? "no such file" : (code ?? "unreadable")}`,
			{
				cause: error,
			},
		);
	}
	const values: Partial<Record<ConfigVariable, string>> = {};
	const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
	lines.forEach((raw, index) => {
		const line = raw.trim();
		if (line === "" || line.startsWith("#")) return;
		const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
		if (!match) throw new UsageError(`${path}:${index + 1}:1 expected KEY=VALUE`);
		const key = match[1]!;
		if (key === "SCRAPEJOB_DEMO_SITE")
			throw new UsageError(
				`${path}:${index + 1}:1 SCRAPEJOB_DEMO_SITE is not read from a config file: \`run --sandbox\` sets it to its demo site; elsewhere set it in the environment`,
			);
		if (!(CONFIG_VARIABLES as readonly string[]).includes(key)) {
			const near = didYouMean(key, CONFIG_VARIABLES);
			const hint = near ? `did you mean ${near}?` : `known: ${CONFIG_VARIABLES.join(", ")}`;
			throw new UsageError(`${path}:${index + 1}:1 unknown setting ${key}; ${hint}`);
		}
		// As `sh` (and dotenv) read the line: a `#` after a space starts a comment, quotes are taken off.
		const written = match[2]!.trim();
		const quoted = /^(['"])(.*?)\1(?:\s+#.*)?$/.exec(written);
		values[key as ConfigVariable] = quoted ? quoted[2]! : written.replace(/\s+#.*$/, "");
	});
	return values;
}

const SOURCE_TEXT = { flag: "the command line", env: "the environment", config: "the config file" } as const;

/**
 * What makes a key unusable in an HTTP header, or null: a character inside it that is not printable
 * ASCII (sent, every fetch would fail before leaving the machine). The text never holds the key.
 */
export function keyHeaderProblem(key: string): string | null {
	const bad = /[^\x21-\x7e]/.exec(key);
	if (bad === null) return null;
	const code = bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0");
	return `holds a character an HTTP header cannot carry (U+${code} at character ${bad.index + 1} of ${key.length})`;
}

/** A configured key, refused (exit 2) when a character inside it cannot go in a header. */
function checkedKey(key: string | undefined, what: string): string | undefined {
	const problem = key === undefined ? null : keyHeaderProblem(key);
	if (problem !== null) throw new UsageError(`${what} ${problem}: keys are printable ASCII; copy the key again`);
	return key;
}

/** Each flag `resolveConfig` takes: a misspelt `scraperUrl` would fall back to the public service's address, the key sent there. */
const CONFIG_FLAGS = {
	config: "string",
	apiUrl: "string",
	scraperUrl: "string",
	fleet: "string",
} as const satisfies OptionKinds<ConfigFlags>;

/** Resolve keys and base addresses: flags win over environment, environment over the config file. */
export async function resolveConfig(options: {
	flags: ConfigFlags;
	env: NodeJS.ProcessEnv;
	cwd: string;
}): Promise<ResolvedConfig> {
	checkOptions("resolveConfig", options, { flags: "object", env: "object", cwd: "string" });
	checkOptions("resolveConfig's flags", options.flags, CONFIG_FLAGS);
	const fromFile = options.flags.config ? await readConfigFile(resolve(options.cwd, options.flags.config)) : {};
	const sources: Partial<Record<ConfigVariable, "flag" | "env" | "config">> = {};
	// Values trimmed: a carriage return left by a file with Windows line ends (sourced by `sh`) or a pasted
	// space is no part of a key, an address or a schema name.
	const pick = (name: ConfigVariable, flag: string | undefined): string | undefined => {
		for (const [value, source] of [
			[flag, "flag"],
			[options.env[name], "env"],
			[fromFile[name], "config"],
		] as const) {
			const trimmed = value?.trim();
			if (trimmed) {
				sources[name] = source;
				return trimmed;
			}
		}
		return undefined;
	};
	const apiUrl = pick("SCRAPEJOB_API_URL", options.flags.apiUrl);
	const scraperUrl = pick("SCRAPEJOB_SCRAPER_URL", options.flags.scraperUrl);
	// Check addresses now, so a plain-http typo fails before any key is sent anywhere.
	if (apiUrl) parseBaseUrl(apiUrl, "SCRAPEJOB_API_URL");
	if (scraperUrl) parseBaseUrl(scraperUrl, "SCRAPEJOB_SCRAPER_URL");
	const key = (name: "SCRAPEJOB_ACCOUNT_KEY" | "SCRAPEJOB_SCRAPER_KEY") => {
		const value = pick(name, undefined);
		return checkedKey(value, `${name} (from ${SOURCE_TEXT[sources[name] ?? "env"]})`);
	};
	return {
		accountKey: key("SCRAPEJOB_ACCOUNT_KEY"),
		scraperKey: key("SCRAPEJOB_SCRAPER_KEY"),
		apiUrl,
		scraperUrl,
		fleetUrl: pick("SCRAPEJOB_FLEET_URL", options.flags.fleet),
		fleetSchema: pick("SCRAPEJOB_FLEET_SCHEMA", undefined),
		sources,
	};
}
