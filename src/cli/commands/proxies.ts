import { writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { type Command, Option } from "commander";
import type { GenerateProxiesParams, TargetingPlace, TargetingSettings } from "../../api/index.js";
import { cliCommand, UsageError } from "../../common/index.js";
import { type CliContext, writeLine } from "../context.js";
import { closestMatches } from "../format/index.js";
import { answeringErrorsInJson } from "../json-error.js";
import { addServiceOptions, connectService, requireAccount, type ServiceFlags } from "../service-connection.js";
import { catalogueFor, countryIn, placesOf, placeValue } from "./targeting.js";

/** Product codes of generation (docs/service.md, "Account endpoints"); `static_residential` is accepted and sent hyphenated. */
export const GENERATE_PRODUCTS = ["rp", "rpc", "sdc", "mp", "static-residential"] as const;
export type GenerateProduct = (typeof GENERATE_PRODUCTS)[number];
export const SESSION_TYPES = ["sticky", "hard"] as const;
export const PROXY_FORMATS = ["1", "2", "3"] as const;
export const PROXY_PROTOCOLS = ["http", "socks5"] as const;
/** Proxies per generation (docs/service.md, "Proxy lists"). */
export const AMOUNT_RANGE = { min: 1, max: 100 } as const;
/** Sticky session length, minutes (docs/service.md, "Proxy lists"). */
export const LIFETIME_MINUTES_RANGE = { min: 1, max: 1440 } as const;

/** Options static residential ignores (docs/service.md, "Proxy lists": it returns all the account's proxies). */
const STATIC_IGNORED = ["countries", "city", "region", "isp", "session", "lifetime", "amount", "adblock"] as const;

/** Flags as commander hands them over: text, checked by `checkProxyFlags`. */
export interface ProxiesFlags extends ServiceFlags {
	product: string;
	countries?: string;
	city?: string;
	region?: string;
	isp?: string;
	session?: string;
	lifetime?: string;
	amount?: string;
	format?: string;
	protocol?: string;
	/** false with --no-protocol. */
	prependProtocol?: boolean;
	adblock?: boolean;
	out?: string;
	json?: boolean;
}

/**
 * `--no-protocol` would share commander's `protocol` attribute with `--protocol <name>`, and the later
 * flag would erase the other; `--protocol socks5 --no-protocol` must keep both (socks5 ports, bare lines).
 */
class PrependProtocolOption extends Option {
	override attributeName(): string {
		return "prependProtocol";
	}
}

export function registerProxiesCommand(program: Command, ctx: CliContext): void {
	const command = program
		.command("proxies")
		.description("generate a proxy list for other tools (one proxy a line)")
		.requiredOption("--product <code>", `product: ${GENERATE_PRODUCTS.join(", ")}`)
		.option("--countries <list>", "comma-separated ISO country codes, e.g. US,DE (one is picked at random per proxy)")
		.option("--city <id>", "city id exactly as `npx scrapejob targeting --country CC` lists it; needs one country")
		.option("--region <id>", "region id exactly as `npx scrapejob targeting --country CC` lists it; needs one country")
		.option("--isp <name>", "ISP name (not for rpc)")
		.option("--session <type>", "sticky (same IP for --lifetime minutes, default 30) or hard (permanent IP)")
		.option("--lifetime <minutes>", "sticky session length, 1 to 1440 minutes (not for hard sessions)")
		.option("--amount <n>", "number of proxies, 1 to 100")
		.option("--format <n>", "1 user:pass@host:port (default) · 2 host:port:user:pass · 3 user:pass:host:port")
		.option("--protocol <name>", "http (default) or socks5")
		.addOption(new PrependProtocolOption("--no-protocol", "leave out the protocol:// prefix of each line"))
		.option("--adblock", "block ads through these proxies (not for rpc)")
		.option("--out <file>", "write the list to this file instead of stdout")
		.option("--json", "print the parsed proxies (protocol, host, port, username, password, targeting) as JSON");
	addServiceOptions(command);
	command.addHelpText(
		"after",
		`
Calls GET /public/generate. Every option is checked before anything is sent; city and region are
checked against the targeting catalogue (and the closest values suggested). static-residential ignores
all filters and returns all the account's static proxies. The lines carry proxy passwords: treat the
output as a secret.

Examples:
  npx scrapejob proxies --product rp --countries US --session sticky --lifetime 60 --amount 10
  npx scrapejob proxies --product rp --countries US --city new.york --format 2 --out proxies.txt`,
	);
	command.action((flags: ProxiesFlags) =>
		answeringErrorsInJson(ctx, flags.json === true, async () => {
			await runProxies(ctx, flags);
		}),
	);
}

export async function runProxies(ctx: CliContext, flags: ProxiesFlags): Promise<void> {
	const checked = checkProxyFlags(flags);
	if (checked.problems.length > 0) throw problemsError(checked.problems);
	if (checked.ignored.length > 0) {
		writeLine(
			ctx.stderr,
			`note: static-residential ignores filters and returns all the account's static proxies; ignored: ${checked.ignored
				.map((name) => `--${name}`)
				.join(", ")}`,
		);
	}
	const connection = await connectService(ctx, flags);
	try {
		const account = requireAccount(connection);
		const params = checked.params;
		if (params.city !== undefined || params.region !== undefined) {
			const problems = checkPlaces(await account.settings(ctx.signal), params);
			if (problems.length > 0) throw problemsError(problems);
		}
		const generated = await account.generate(params, ctx.signal);
		const text = flags.json ? `${JSON.stringify(generated.proxies, null, 2)}\n` : linesText(generated.lines);
		if (flags.out === undefined) {
			ctx.stdout.write(text);
			return;
		}
		const path = resolve(ctx.cwd, flags.out);
		await writeFile(path, text, { encoding: "utf8", mode: 0o600 });
		writeLine(ctx.stdout, `wrote ${generated.lines.length} proxies to ${path}`);
	} finally {
		await connection.close();
	}
}

function linesText(lines: readonly string[]): string {
	return lines.length ? `${lines.join("\n")}\n` : "";
}

function problemsError(problems: readonly string[]): UsageError {
	return new UsageError(problems.length === 1 ? (problems[0] ?? "") : `invalid options:\n  ${problems.join("\n  ")}`);
}

export interface CheckedProxyFlags {
	/** Parameters to send; only meaningful when `problems` is empty. */
	readonly params: GenerateProxiesParams;
	/** One entry per broken rule: the flag, the rule and what was received. */
	readonly problems: string[];
	/** Filter flags given for static-residential, which ignores them (they are not sent). */
	readonly ignored: string[];
}

const received = (value: string) => `got ${JSON.stringify(value)}`;

function wholeNumber(flag: string, value: string, range: { min: number; max: number }, problems: string[]) {
	const number = /^\s*\d+\s*$/.test(value) ? Number(value) : Number.NaN;
	if (!Number.isSafeInteger(number) || number < range.min || number > range.max) {
		problems.push(`--${flag} must be a whole number from ${range.min} to ${range.max} (${received(value)})`);
		return undefined;
	}
	return number;
}

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[], problems: string[]) {
	const normalized = value.trim().toLowerCase();
	if ((allowed as readonly string[]).includes(normalized)) return normalized as T;
	problems.push(`--${flag} must be one of ${allowed.join(", ")} (${received(value)})`);
	return undefined;
}

/**
 * The local rules of proxy generation (docs/service.md, "Proxy lists", with its product remarks), checked before anything is sent. Every broken
 * rule is reported, not just the first, so one run shows everything to fix.
 */
export function checkProxyFlags(flags: ProxiesFlags): CheckedProxyFlags {
	const problems: string[] = [];
	const ignored: string[] = [];
	const rawProduct = flags.product.trim().toLowerCase();
	const productText = rawProduct === "static_residential" ? "static-residential" : rawProduct;
	const product = (GENERATE_PRODUCTS as readonly string[]).includes(productText)
		? (productText as GenerateProduct)
		: undefined;
	if (!product) {
		const hint = rawProduct === "dcp" ? "; datacenter proxies are generated as sdc" : "";
		problems.push(`--product must be one of ${GENERATE_PRODUCTS.join(", ")} (${received(flags.product)}${hint})`);
	}
	const params: GenerateProxiesParams = { product: product ?? flags.product };

	if (product === "static-residential") {
		for (const name of STATIC_IGNORED) if (flags[name] !== undefined) ignored.push(name);
	} else {
		if (flags.countries !== undefined) {
			const countries = flags.countries
				.split(",")
				.map((code) => code.trim())
				.filter((code) => code !== "");
			const bad = countries.filter((code) => !/^[A-Za-z]{2}$/.test(code));
			if (countries.length === 0 || bad.length > 0) {
				problems.push(
					`--countries must be comma-separated two-letter ISO country codes, e.g. US,DE (${received(flags.countries)})`,
				);
			}
			params.countries = countries.map((code) => code.toUpperCase());
		}
		for (const flag of ["city", "region"] as const) {
			const value = flags[flag];
			if (value === undefined) continue;
			if (value.trim() === "") problems.push(`--${flag} must not be empty`);
			const count = params.countries?.length ?? 0;
			if (count !== 1) {
				problems.push(
					`--${flag} needs exactly one country in --countries (${count === 0 ? "got none" : received(flags.countries ?? "")})`,
				);
			}
			params[flag] = value.trim();
		}
		if (flags.isp !== undefined) {
			if (product === "rpc")
				problems.push(`--isp is not available for rpc (Core Residential) (${received(flags.isp)})`);
			if (flags.isp.trim() === "") problems.push("--isp must not be empty");
			params.isp = flags.isp.trim();
		}
		if (flags.adblock) {
			if (product === "rpc") problems.push("--adblock is not available for rpc (Core Residential)");
			params.adblock = true;
		}
		const session = flags.session === undefined ? undefined : oneOf("session", flags.session, SESSION_TYPES, problems);
		if (session) params.session = session;
		if (flags.lifetime !== undefined) {
			const lifetime = wholeNumber("lifetime", flags.lifetime, LIFETIME_MINUTES_RANGE, problems);
			if (session === "hard") {
				problems.push(
					`--lifetime is not available with --session hard, whose IP is permanent (${received(flags.lifetime)})`,
				);
			} else if (flags.session === undefined) {
				// Without a session the IP changes every request; a lifetime would be silently meaningless.
				problems.push(`--lifetime applies to sticky sessions only: add --session sticky (${received(flags.lifetime)})`);
			}
			if (lifetime !== undefined) params.lifetime = lifetime;
		}
		if (flags.amount !== undefined) {
			const amount = wholeNumber("amount", flags.amount, AMOUNT_RANGE, problems);
			if (amount !== undefined) params.amount = amount;
		}
	}
	if (flags.format !== undefined) {
		const format = oneOf("format", flags.format, PROXY_FORMATS, problems);
		if (format) params.format = Number(format) as 1 | 2 | 3;
	}
	if (flags.protocol !== undefined) {
		const protocol = oneOf("protocol", flags.protocol, PROXY_PROTOCOLS, problems);
		if (protocol) params.protocol = protocol;
	}
	if (flags.prependProtocol === false) params.prepend_protocol = false;
	return { params, problems, ignored };
}

/**
 * City and region need an exact value of the catalogue (docs/service.md, "Targeting catalogue" and "Proxy lists"). A near miss gets the closest
 * values, so the user can copy one instead of guessing again.
 */
export function checkPlaces(settings: TargetingSettings, params: GenerateProxiesParams): string[] {
	const problems: string[] = [];
	const countryCode = params.countries?.[0] ?? "";
	let catalogue: ReturnType<typeof catalogueFor>;
	let country: { code: string; name: string };
	try {
		catalogue = catalogueFor(settings, params.product, "--product");
		country = countryIn(catalogue.catalogue, countryCode, "--countries", catalogue.code);
	} catch (error) {
		return [error instanceof Error ? error.message : String(error)];
	}
	const lookup = (flag: "city" | "region", places: readonly TargetingPlace[] | undefined) => {
		const value = params[flag];
		if (value === undefined) return undefined;
		const candidates = placesOf(places, country.code);
		const found = candidates.find((place) => placeValue(place) === value);
		if (found) return found;
		const closest = closestMatches(
			value,
			candidates.map((place) => ({ item: place, keys: [placeValue(place), place.name ?? ""] })),
		).map((place) => `${JSON.stringify(placeValue(place))}${place.name ? ` (${place.name})` : ""}`);
		problems.push(
			`--${flag} needs an exact ${flag} id of ${country.name} (${country.code}) from the ${catalogue.code} targeting catalogue (${received(value)})` +
				(closest.length
					? `; closest: ${closest.join(", ")}`
					: `; the catalogue lists no ${flag === "city" ? "cities" : "regions"} there`) +
				`; list them with: ${cliCommand(["targeting", "--product", catalogue.code, "--country", country.code])}`,
		);
		return undefined;
	};
	const region = lookup("region", catalogue.catalogue.regions?.data);
	const city = lookup("city", catalogue.catalogue.cities?.data);
	if (region && city?.region_id !== undefined && region.id !== undefined && city.region_id !== region.id) {
		problems.push(
			`--city ${JSON.stringify(params.city)} lies in region ${JSON.stringify(city.region_id)}, not in --region ${JSON.stringify(params.region)}`,
		);
	}
	return problems;
}
