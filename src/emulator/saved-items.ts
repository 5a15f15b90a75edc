/**
 * What an account keeps on the service between requests (docs/service.md, "Saved items" and "Extraction on the service" and "Account endpoints"): saved scraper
 * configs, extraction schemes, cloud-storage configs, schedules with their runs, and browser
 * fingerprint profiles. One store per emulator, shared by every scraper key of the account (as its
 * credits are). Records are kept in the shape the endpoints answer; nothing here answers HTTP.
 */
import { randomBytes } from "node:crypto";

export type Params = Record<string, unknown>;

export interface SavedConfig {
	readonly id: string;
	name: string;
	/** Realtime parameters, as sent. */
	config: Params;
	readonly created_at: string;
	updated_at: string;
}

/** `ready`: usable; `processing`: a background test runs; `failed`: the last test found no data. */
export type SchemeStatus = "ready" | "processing" | "failed";

export interface SavedScheme {
	readonly id: string;
	name: string;
	/** Realtime parameters with `extract_scheme` (and `url` when it was tested). */
	config: Params;
	status: SchemeStatus;
	extract_prompt: string | null;
	/** The scheme the AI fix produced (`fix: true`). */
	generated_scheme: unknown;
	/** What the last test extracted, or why it failed. */
	test_result: Params | null;
	readonly created_at: string;
	updated_at: string;
}

export const STORAGE_TYPES = ["s3_compatible", "gcs", "azure_blob"] as const;
export type StorageType = (typeof STORAGE_TYPES)[number];

export interface StorageConfig {
	readonly id: string;
	name: string;
	storage_type: StorageType;
	/** Stored as given; answered with its credentials masked (the service stores them encrypted). */
	config: Params;
	is_default: boolean;
	readonly created_at: string;
	updated_at: string;
}

export type RunStatus = "running" | "success" | "failed";

export interface ScheduleRun {
	readonly id: string;
	readonly schedule_id: string;
	status: RunStatus;
	readonly started_at: string;
	finished_at: string | null;
	readonly url: string;
	credits_used: number;
	status_code: number | null;
	error: string | null;
}

export interface Schedule {
	readonly id: string;
	name: string;
	config_id: string;
	interval_minutes: number;
	start_time: string | null;
	stop_on_error: boolean;
	is_active: boolean;
	last_run: string | null;
	last_status: "success" | "failed" | null;
	/** In service time: what the next run is due at. */
	next_run: string | null;
	readonly created_at: string;
	updated_at: string;
}

export interface BrowserProfile {
	readonly id: string;
	readonly os: string;
	readonly browser: string;
	readonly browser_version: string;
	readonly created_at: string;
}

/** Items by id, in creation order. */
export class Collection<T extends { readonly id: string }> {
	readonly #items = new Map<string, T>();

	add(item: T): T {
		this.#items.set(item.id, item);
		return item;
	}

	get(id: string): T | undefined {
		return this.#items.get(id);
	}

	delete(id: string): boolean {
		return this.#items.delete(id);
	}

	values(): T[] {
		return [...this.#items.values()];
	}

	get size(): number {
		return this.#items.size;
	}
}

export interface SavedItems {
	readonly configs: Collection<SavedConfig>;
	readonly schemes: Collection<SavedScheme>;
	readonly storage: Collection<StorageConfig>;
	readonly schedules: Collection<Schedule>;
	/** Runs per schedule id, oldest first. */
	readonly runs: Map<string, ScheduleRun[]>;
	readonly profiles: Collection<BrowserProfile>;
}

export function createSavedItems(): SavedItems {
	return {
		configs: new Collection(),
		schemes: new Collection(),
		storage: new Collection(),
		schedules: new Collection(),
		runs: new Map(),
		profiles: new Collection(),
	};
}

/** An id as the service spells them: `cfg_`, `sch_`, `stor_`, `job_`, `run_`, `prof_` and 16 hex digits. */
export function newId(prefix: string): string {
	return `${prefix}${randomBytes(8).toString("hex")}`;
}

/** Fields of a storage config that hold credentials: never answered in full. */
export const STORAGE_SECRET_FIELDS: ReadonlySet<string> = new Set([
	"access_key",
	"secret_key",
	"credentials_json",
	"connection_string",
	"account_key",
	"sas_token",
	"private_key",
]);

/** What the service answers for a stored credential. */
export const MASKED_CREDENTIAL = "********";

/** A storage config as answered: credentials replaced by `********`. */
export function storageView(storage: StorageConfig): Params {
	const config: Params = {};
	for (const [name, value] of Object.entries(storage.config)) {
		config[name] = STORAGE_SECRET_FIELDS.has(name) && value !== undefined && value !== null ? MASKED_CREDENTIAL : value;
	}
	return { ...storage, config };
}
