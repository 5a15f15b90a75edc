/**
 * City and region items of `/public/settings` (docs/service.md, "Targeting catalogue": "nested city entries carrying city names and
 * regional codes", layout not shown). Two layouts are read: flat items `{id, name, country_code}` (the
 * service's own client), and per-country groups holding a list (`{country_code, cities: [...]}`, the
 * list's items objects or plain names). Both become flat places; an entry with neither an id nor a
 * name is dropped, so nothing downstream shows an empty value.
 */

export interface TargetingPlace {
	/** The value `/public/generate` accepts for `city`/`region`. */
	readonly id?: string;
	readonly name?: string;
	readonly country_code?: string;
	readonly region_id?: string;
}

const LIST_KEYS = ["cities", "regions", "items", "data", "list"] as const;
const ID_KEYS = ["id", "value", "code", "slug"] as const;
const NAME_KEYS = ["name", "label", "city", "region", "title"] as const;
const COUNTRY_KEYS = ["country_code", "countryCode", "country"] as const;

function text(record: Record<string, unknown>, keys: readonly string[]): string | undefined {
	for (const key of keys) {
		const value = record[key];
		if (typeof value === "string" && value.trim() !== "") return value;
		if (typeof value === "number" && Number.isFinite(value)) return String(value);
	}
	return undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A two-letter code, from a field that may hold a code or a country's name. */
function countryCode(record: Record<string, unknown>): string | undefined {
	const value = text(record, COUNTRY_KEYS);
	return value !== undefined && /^[A-Za-z]{2}$/.test(value) ? value.toUpperCase() : undefined;
}

function place(item: unknown, inheritedCountry: string | undefined): TargetingPlace | null {
	if (typeof item === "string") {
		return item.trim() === ""
			? null
			: { id: item, name: item, ...(inheritedCountry ? { country_code: inheritedCountry } : {}) };
	}
	if (!isRecord(item)) return null;
	const id = text(item, ID_KEYS);
	const name = text(item, NAME_KEYS);
	if (id === undefined && name === undefined) return null;
	const country = countryCode(item) ?? inheritedCountry;
	const region = text(item, ["region_id", "regionId", "region_code"]);
	return {
		...(id !== undefined ? { id } : {}),
		...(name !== undefined ? { name } : {}),
		...(country !== undefined ? { country_code: country } : {}),
		...(region !== undefined ? { region_id: region } : {}),
	};
}

function groupList(item: Record<string, unknown>): unknown[] | undefined {
	for (const key of LIST_KEYS) if (Array.isArray(item[key])) return item[key] as unknown[];
	return undefined;
}

/** Flat places from either layout; anything unreadable is skipped. */
export function readPlaces(data: unknown): TargetingPlace[] {
	const places: TargetingPlace[] = [];
	const add = (item: unknown, country: string | undefined) => {
		const read = place(item, country);
		if (read) places.push(read);
	};
	if (Array.isArray(data)) {
		for (const item of data) {
			const list = isRecord(item) ? groupList(item) : undefined;
			if (isRecord(item) && list) for (const child of list) add(child, countryCode(item));
			else add(item, undefined);
		}
	} else if (isRecord(data)) {
		// Groups keyed by country code: `{ US: [...], DE: [...] }`.
		for (const [key, list] of Object.entries(data)) {
			const country = /^[A-Za-z]{2}$/.test(key) ? key.toUpperCase() : undefined;
			if (Array.isArray(list)) for (const child of list) add(child, country);
		}
	}
	return places;
}
