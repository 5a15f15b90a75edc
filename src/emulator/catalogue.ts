/**
 * The targeting catalogue of `GET /public/settings` (docs/service.md, "Targeting catalogue" and "Where the documentation is silent"): a handful
 * of countries with regions, cities and ISPs. Ids are lowercase with dots for spaces — exactly the
 * values `/public/generate` accepts for `city`/`region` and writes into proxy passwords.
 */
import type { ProxyProductCode } from "./account-data.js";

export interface CityItem {
	readonly id: string;
	readonly name: string;
	readonly country_code: string;
	readonly region_id: string;
}

export interface RegionItem {
	readonly id: string;
	readonly name: string;
	readonly country_code: string;
}

export interface IspItem {
	readonly value: string;
	readonly countryCode: string;
}

export interface ProductCatalogue {
	readonly countries: Readonly<Record<string, string>>;
	readonly cities: { readonly data: readonly CityItem[] };
	readonly regions: { readonly data: readonly RegionItem[] };
	readonly isp: Readonly<Record<string, IspItem>>;
	readonly continents: Readonly<Record<string, { name: string; countries: Record<string, string> }>>;
}

export type Catalogue = Readonly<Record<ProxyProductCode, ProductCatalogue>>;

interface CountrySource {
	readonly code: string;
	readonly name: string;
	readonly continent: keyof typeof CONTINENT_NAMES;
	/** region id → name */
	readonly regions: Readonly<Record<string, string>>;
	/** [city name, region id] */
	readonly cities: ReadonlyArray<readonly [string, string]>;
	/** ISP name → network identifier */
	readonly isps: Readonly<Record<string, string>>;
}

const CONTINENT_NAMES = {
	"north.america": "North America",
	"south.america": "South America",
	europe: "Europe",
	asia: "Asia",
} as const;

const COUNTRIES: readonly CountrySource[] = [
	{
		code: "US",
		name: "United States",
		continent: "north.america",
		regions: {
			california: "California",
			"new.york": "New York",
			texas: "Texas",
			florida: "Florida",
			illinois: "Illinois",
		},
		cities: [
			["Los Angeles", "california"],
			["San Francisco", "california"],
			["New York", "new.york"],
			["Buffalo", "new.york"],
			["Houston", "texas"],
			["Austin", "texas"],
			["Miami", "florida"],
			["Chicago", "illinois"],
		],
		isps: {
			"Comcast Cable": "comcast.cable",
			"AT&T Services": "att.services",
			"Verizon Business": "verizon.business",
			"Charter Communications": "charter.communications",
		},
	},
	{
		code: "DE",
		name: "Germany",
		continent: "europe",
		regions: {
			bavaria: "Bavaria",
			berlin: "Berlin",
			hesse: "Hesse",
			"north.rhine.westphalia": "North Rhine-Westphalia",
		},
		cities: [
			["Munich", "bavaria"],
			["Nuremberg", "bavaria"],
			["Berlin", "berlin"],
			["Frankfurt am Main", "hesse"],
			["Cologne", "north.rhine.westphalia"],
			["Dusseldorf", "north.rhine.westphalia"],
		],
		isps: {
			"Deutsche Telekom AG": "deutsche.telekom",
			"Vodafone GmbH": "vodafone.gmbh",
			"Telefonica Germany": "telefonica.germany",
		},
	},
	{
		code: "GB",
		name: "United Kingdom",
		continent: "europe",
		regions: { england: "England", scotland: "Scotland", wales: "Wales" },
		cities: [
			["London", "england"],
			["Manchester", "england"],
			["Birmingham", "england"],
			["Edinburgh", "scotland"],
			["Glasgow", "scotland"],
			["Cardiff", "wales"],
		],
		isps: {
			"British Telecommunications": "british.telecom",
			"Virgin Media": "virgin.media",
			"Sky Broadband": "sky.broadband",
		},
	},
	{
		code: "FR",
		name: "France",
		continent: "europe",
		regions: {
			"ile.de.france": "Île-de-France",
			"provence.alpes.cote.d.azur": "Provence-Alpes-Côte d'Azur",
			"auvergne.rhone.alpes": "Auvergne-Rhône-Alpes",
		},
		cities: [
			["Paris", "ile.de.france"],
			["Marseille", "provence.alpes.cote.d.azur"],
			["Nice", "provence.alpes.cote.d.azur"],
			["Lyon", "auvergne.rhone.alpes"],
		],
		isps: { "Orange S.A.": "orange", "Free SAS": "free.sas", SFR: "sfr" },
	},
	{
		code: "IN",
		name: "India",
		continent: "asia",
		regions: { maharashtra: "Maharashtra", karnataka: "Karnataka", delhi: "Delhi", "uttar.pradesh": "Uttar Pradesh" },
		cities: [
			["Mumbai", "maharashtra"],
			["Pune", "maharashtra"],
			["Bengaluru", "karnataka"],
			["New Delhi", "delhi"],
			["Lucknow", "uttar.pradesh"],
		],
		isps: { "Reliance Jio": "reliance.jio", "Bharti Airtel": "bharti.airtel" },
	},
	{
		code: "NL",
		name: "Netherlands",
		continent: "europe",
		regions: { "north.holland": "North Holland", "south.holland": "South Holland" },
		cities: [
			["Amsterdam", "north.holland"],
			["Rotterdam", "south.holland"],
			["The Hague", "south.holland"],
		],
		isps: { KPN: "kpn", Ziggo: "ziggo" },
	},
	{
		code: "JP",
		name: "Japan",
		continent: "asia",
		regions: { "tokyo.prefecture": "Tokyo", "osaka.prefecture": "Osaka" },
		cities: [
			["Tokyo", "tokyo.prefecture"],
			["Osaka", "osaka.prefecture"],
		],
		isps: { "NTT Communications": "ntt", KDDI: "kddi" },
	},
	{
		code: "BR",
		name: "Brazil",
		continent: "south.america",
		regions: { "sao.paulo.state": "São Paulo", "rio.de.janeiro.state": "Rio de Janeiro" },
		cities: [
			["Sao Paulo", "sao.paulo.state"],
			["Rio de Janeiro", "rio.de.janeiro.state"],
		],
		isps: { Claro: "claro", Vivo: "vivo" },
	},
];

/** What each product offers: which countries, and whether cities/regions and ISPs can be targeted. */
const PRODUCT_COVERAGE: Readonly<
	Record<ProxyProductCode, { countries: readonly string[] | "all"; geo: boolean; isp: boolean }>
> = {
	rp: { countries: "all", geo: true, isp: true },
	// Core residential: no ISP targeting (docs/service.md, "Proxy lists").
	rpc: { countries: "all", geo: true, isp: false },
	mp: { countries: ["US", "DE", "GB", "FR", "IN", "BR"], geo: true, isp: true },
	dcp: { countries: ["US", "DE", "GB", "FR", "NL"], geo: false, isp: false },
};

/** Turn a display name into a targeting id: lowercase, spaces and punctuation to dots. */
export function toTargetingId(name: string): string {
	return name
		.normalize("NFD")
		.replace(/[\u0300-\u036f]/g, "")
		.toLowerCase()
		.replace(/[^a-z0-9]+/g, ".")
		.replace(/^\.|\.$/g, "");
}

export function createCatalogue(): Catalogue {
	const build = (code: ProxyProductCode): ProductCatalogue => {
		const coverage = PRODUCT_COVERAGE[code];
		const included = COUNTRIES.filter(
			(country) => coverage.countries === "all" || coverage.countries.includes(country.code),
		);
		const countries: Record<string, string> = {};
		const cities: CityItem[] = [];
		const regions: RegionItem[] = [];
		const isp: Record<string, IspItem> = {};
		const continents: Record<string, { name: string; countries: Record<string, string> }> = {};
		for (const country of included) {
			countries[country.code] = country.name;
			continents[country.continent] ??= { name: CONTINENT_NAMES[country.continent], countries: {} };
			const continent = continents[country.continent] as { countries: Record<string, string> };
			continent.countries[country.name] = country.code;
			if (coverage.geo) {
				for (const [id, name] of Object.entries(country.regions))
					regions.push({ id, name, country_code: country.code });
				for (const [name, regionId] of country.cities) {
					cities.push({ id: toTargetingId(name), name, country_code: country.code, region_id: regionId });
				}
			}
			if (coverage.isp) {
				for (const [name, value] of Object.entries(country.isps)) isp[name] = { value, countryCode: country.code };
			}
		}
		return { countries, cities: { data: cities }, regions: { data: regions }, isp, continents };
	};
	return { rp: build("rp"), rpc: build("rpc"), mp: build("mp"), dcp: build("dcp") };
}

/**
 * How `/public/settings` lays out cities and regions. The spec shows neither ("nested city entries
 * carrying city names and regional codes"): `flat` is the service's own client's reading (items
 * `{id, name, country_code, region_id}`); `grouped` is one entry per country holding its list, so
 * clients can be tested against both.
 */
export const CATALOGUE_LAYOUTS = ["flat", "grouped"] as const;
export type CatalogueLayout = (typeof CATALOGUE_LAYOUTS)[number];

/** The catalogue with cities and regions grouped per country: `{country_code, country, cities: [{id, name, region_id}]}`. */
export function groupedCatalogue(catalogue: Catalogue): Record<string, unknown> {
	const group = <T extends { country_code: string }>(
		items: readonly T[],
		countries: Readonly<Record<string, string>>,
		key: string,
	) => {
		const byCountry = new Map<string, Array<Omit<T, "country_code">>>();
		for (const { country_code, ...rest } of items) {
			const list = byCountry.get(country_code) ?? [];
			list.push(rest);
			byCountry.set(country_code, list);
		}
		return [...byCountry].map(([code, list]) => ({
			country_code: code,
			country: countries[code] ?? code,
			[key]: list,
		}));
	};
	const result: Record<string, unknown> = {};
	for (const [product, entry] of Object.entries(catalogue)) {
		result[product] = {
			...entry,
			cities: { data: group(entry.cities.data, entry.countries, "cities") },
			regions: { data: group(entry.regions.data, entry.countries, "regions") },
		};
	}
	return result;
}
