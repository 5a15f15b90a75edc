import type { Command } from "commander";
import type { TargetingCatalogue, TargetingPlace, TargetingSettings } from "../../api/index.js";
import { plural, UsageError } from "../../common/index.js";
import { type CliContext, useColor, writeJson, writeLine } from "../context.js";
import { EXIT } from "../exit-codes.js";
import { closestMatches, createStyle, formatTable, productName, type Style } from "../format/index.js";
import { answeringErrorsInJson } from "../json-error.js";
import { addServiceOptions, connectService, requireAccount, type ServiceFlags } from "../service-connection.js";

export interface TargetingFlags extends ServiceFlags {
	product: string;
	country?: string;
	search?: string;
	json?: boolean;
}

/** An ISP entry in one shape, whichever of the two the service sent (docs/service.md, "Targeting catalogue"). */
export interface IspEntry {
	readonly name: string;
	/** The network identifier (docs: `value`); the entry's key when the service sent none. */
	readonly networkId: string;
	readonly countries: readonly string[];
}

export function registerTargetingCommand(program: Command, ctx: CliContext): void {
	const command = program
		.command("targeting")
		.description("look up targeting values: countries, and a country's regions, cities and ISPs")
		.requiredOption("--product <code>", "catalogue of a product: rp, rpc, mp or dcp (sdc reads dcp's)")
		.option("--country <CC>", "two-letter country code: list its regions, cities and ISPs")
		.option("--search <text>", "keep only entries whose code, id or name contains this text (any case)")
		.option("--json", "print the matching catalogue entries as the service returned them");
	addServiceOptions(command);
	command.addHelpText(
		"after",
		`
Reads GET /public/settings (a large catalogue; allowed 60 s). City and region targeting in
\`npx scrapejob proxies\` needs the exact id listed here.

Examples:
  npx scrapejob targeting --product rp --search united
  npx scrapejob targeting --product rp --country US --search new`,
	);
	command.action((flags: TargetingFlags) =>
		answeringErrorsInJson(ctx, flags.json === true, async () => {
			await runTargeting(ctx, flags);
		}),
	);
}

export async function runTargeting(ctx: CliContext, flags: TargetingFlags): Promise<void> {
	const connection = await connectService(ctx, flags);
	try {
		const settings = await requireAccount(connection).settings(ctx.signal);
		const { code, catalogue } = catalogueFor(settings, flags.product, "--product");
		const needle = flags.search?.toLowerCase() ?? "";
		const matches = (...texts: Array<string | undefined>) =>
			needle === "" || texts.some((text) => text?.toLowerCase().includes(needle));
		const style = createStyle(useColor(ctx, ctx.stdout));

		if (flags.country === undefined) {
			const countries = Object.entries(catalogue.countries)
				.filter(([cc, name]) => matches(cc, name))
				.sort(([a], [b]) => a.localeCompare(b));
			// A search without --country looks through every country's regions and cities too (`berl` finds Berlin).
			const regions =
				needle === "" ? [] : (catalogue.regions?.data ?? []).filter((place) => matches(place.id, place.name));
			const cities =
				needle === "" ? [] : (catalogue.cities?.data ?? []).filter((place) => matches(place.id, place.name));
			const nothing = needle !== "" && countries.length + regions.length + cities.length === 0;
			if (nothing) nothingMatches(ctx, flags, code);
			if (flags.json) {
				writeJson(ctx.stdout, {
					product: code,
					countries: Object.fromEntries(countries),
					...(needle === "" ? {} : { regions, cities }),
				});
				return;
			}
			if (nothing) return;
			writeLine(
				ctx.stdout,
				style.bold(`${productName(code)} (${code}): ${plural(countries.length, "country", "countries")}`),
			);
			for (const line of formatTable([{ header: "code" }, { header: "country" }], countries, {
				style,
				indent: "  ",
			})) {
				writeLine(ctx.stdout, line);
			}
			for (const [title, flag, places] of [
				["Regions", "--region", regions],
				["Cities", "--city", cities],
			] as const) {
				if (places.length === 0) continue;
				writeLine(ctx.stdout, "");
				writeLine(ctx.stdout, style.bold(`${title} (${places.length})`));
				const rows = places.map((place) => [placeValue(place), place.name ?? "", place.country_code ?? ""]);
				for (const line of formatTable([{ header: `id (${flag})` }, { header: "name" }, { header: "country" }], rows, {
					style,
					indent: "  ",
				})) {
					writeLine(ctx.stdout, line);
				}
			}
			return;
		}

		const country = countryIn(catalogue, flags.country, "--country", code);
		const regions = placesOf(catalogue.regions?.data, country.code).filter((place) => matches(place.id, place.name));
		const cities = placesOf(catalogue.cities?.data, country.code).filter((place) => matches(place.id, place.name));
		const isps = Object.entries(catalogue.isp ?? {}).filter(([key, value]) => {
			const entry = ispEntry(key, value);
			return (
				(entry.countries.length === 0 || entry.countries.includes(country.code)) && matches(entry.name, entry.networkId)
			);
		});
		const nothing = needle !== "" && regions.length + cities.length + isps.length === 0;
		if (nothing) nothingMatches(ctx, flags, code, country.code);
		if (flags.json) {
			writeJson(ctx.stdout, {
				product: code,
				country,
				regions,
				cities,
				isp: Object.fromEntries(isps),
			});
			return;
		}
		if (nothing) return;
		for (const line of describeCountry(
			code,
			country,
			regions,
			cities,
			isps.map(([key, value]) => ispEntry(key, value)),
			style,
		)) {
			writeLine(ctx.stdout, line);
		}
	} finally {
		await connection.close();
	}
}

/** `--search` found nothing: say so on stderr (not an empty table) and exit 1. */
function nothingMatches(ctx: CliContext, flags: TargetingFlags, product: string, country?: string): void {
	const where = country ? `${country}'s regions, cities and ISPs` : "countries, regions and cities";
	writeLine(
		ctx.stderr,
		`scrapejob: nothing matches ${JSON.stringify(flags.search)} in the ${product} catalogue's ${where}`,
	);
	ctx.exitCode = EXIT.noMatch;
}

function describeCountry(
	product: string,
	country: { code: string; name: string },
	regions: readonly TargetingPlace[],
	cities: readonly TargetingPlace[],
	isps: readonly IspEntry[],
	style: Style,
): string[] {
	const regionNames = new Map(regions.map((region) => [region.id, region.name]));
	const lines = [style.bold(`${country.name} (${country.code}) in the ${productName(product)} (${product}) catalogue`)];
	lines.push("", style.bold(`Regions (${regions.length})`));
	if (regions.length > 0) {
		lines.push(
			...formatTable(
				[{ header: "id (--region)" }, { header: "name" }],
				regions.map((region) => [placeValue(region), region.name ?? ""]),
				{ style, indent: "  " },
			),
		);
	}
	lines.push("", style.bold(`Cities (${cities.length})`));
	if (cities.length > 0) {
		lines.push(
			...formatTable(
				[{ header: "id (--city)" }, { header: "name" }, { header: "region" }],
				cities.map((city) => [
					placeValue(city),
					city.name ?? "",
					city.region_id ? (regionNames.get(city.region_id) ?? city.region_id) : "",
				]),
				{ style, indent: "  " },
			),
		);
	}
	lines.push("", style.bold(`ISPs (${isps.length})`));
	if (isps.length > 0) {
		lines.push(
			...formatTable(
				[{ header: "name (--isp)" }, { header: "network id" }],
				isps.map((isp) => [isp.name, isp.networkId]),
				{ style, indent: "  " },
			),
		);
	}
	return lines;
}

/**
 * Catalogue keys are rp, rpc, mp, dcp (docs/service.md, "Targeting catalogue"); generation calls the datacenter product sdc, so
 * sdc reads dcp's catalogue. Static residential has none.
 */
const CATALOGUE_ALIASES: Readonly<Record<string, string>> = { sdc: "dcp" };

export function catalogueFor(
	settings: TargetingSettings,
	product: string,
	flag: string,
): { code: string; catalogue: TargetingCatalogue } {
	const code = settings.data[product] ? product : (CATALOGUE_ALIASES[product] ?? product);
	const catalogue = settings.data[code];
	if (!catalogue) {
		const known = Object.keys(settings.data).join(", ") || "none";
		throw new UsageError(
			`${flag} ${JSON.stringify(product)} has no targeting catalogue (the service has catalogues for: ${known})`,
		);
	}
	return { code, catalogue };
}

/** A country of the catalogue by its code (any case), or a usage error that suggests the nearest ones. */
export function countryIn(
	catalogue: TargetingCatalogue,
	input: string,
	flag: string,
	product: string,
): { code: string; name: string } {
	const code = input.trim().toUpperCase();
	const name = catalogue.countries[code];
	if (name !== undefined) return { code, name };
	const suggestions = closestMatches(
		input,
		Object.entries(catalogue.countries).map(([cc, countryName]) => ({
			item: `${cc} (${countryName})`,
			keys: [cc, countryName],
		})),
	);
	throw new UsageError(
		`${flag} ${JSON.stringify(input)} is not a country code of the ${product} targeting catalogue` +
			(suggestions.length ? `; closest: ${suggestions.join(", ")}` : ""),
	);
}

/** A country's places; items without a country code are kept, since the spec does not promise one. */
export function placesOf(places: readonly TargetingPlace[] | undefined, countryCode: string): TargetingPlace[] {
	return (places ?? []).filter(
		(place) => place.country_code === undefined || place.country_code.toUpperCase() === countryCode,
	);
}

/** The value generation accepts for a place: its `id` (docs/service.md, "Where the documentation is silent"), or its name when it has none. */
export function placeValue(place: TargetingPlace): string {
	return place.id ?? place.name ?? "";
}

type IspValue = NonNullable<TargetingCatalogue["isp"]>[string];

export function ispEntry(key: string, value: IspValue): IspEntry {
	return {
		name: value.label ?? key,
		networkId: value.value ?? key,
		countries: value.countryCode
			? [value.countryCode.toUpperCase()]
			: (value.countries ?? []).map((cc) => cc.toUpperCase()),
	};
}
