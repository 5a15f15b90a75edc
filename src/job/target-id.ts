import { hash } from "node:crypto";
import { canonicalJson, hexWord, type ScrapeParams, urlIdentity } from "../common/index.js";

/**
 * The options part of a target's identity: the effective options (defaults merged with the
 * target's own) without `url`, with `mode` spelled out — `mode: auto` written or left to the
 * service's default is the same fetch. Computed once per source, not per row.
 */
export function identityOptionsJson(
	params: Omit<ScrapeParams, "url"> & { url?: string; browser_session?: unknown },
): string {
	const { url: _url, ...options } = params;
	return canonicalJson({ ...options, mode: options.mode ?? "auto" });
}

/** A fetch's identity: the derived id and the same 64 bits as two numbers, for the dedupe set. */
export interface TargetKey {
	/** 16 lowercase hex digits. */
	id: string;
	high: number;
	low: number;
}

/**
 * `id` = the first 16 hex digits (64 bits) of SHA-256 over `url + "\n" + identityOptionsJson`.
 * Stable across runs and machines, so results, duplicates and `--resume` can refer to a target;
 * 64 bits keep the chance of two of a million targets colliding near 3·10⁻⁸.
 */
export function createTargetKey(url: string, optionsJson: string): TargetKey {
	// One-shot `hash` is ~4× faster than createHash().update().digest(), which matters at a million rows.
	const hex = hash("sha256", `${url}\n${optionsJson}`, "hex");
	// Two short slices joined, not `hex.slice(0, 16)`: a slice of 13 characters or more is a view that
	// keeps the whole digest, and every string compare of such ids (the job store sorts each batch of
	// records by id) leaves V8's fast path for its runtime. Short slices are copies; joined, they are
	// flattened once, on first use.
	return { id: `${hex.slice(0, 8)}${hex.slice(8, 16)}`, high: hexWord(hex, 0), low: hexWord(hex, 8) };
}

/**
 * A listed target's key (docs/behaviour.md, "One URL identity"): its URL's identity (`urlIdentity`: `https://x/p#top`, `HTTP://X/p` and
 * `https://x:443/p` are one page) with its options. Its `id` is the target's id unless a source names
 * ids, and the duplicate check's key always.
 */
export function createListedTargetKey(url: string, optionsJson: string): TargetKey {
	return createTargetKey(urlIdentity(url), optionsJson);
}
