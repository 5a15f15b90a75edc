import { formatNumber } from "../../common/index.js";

/** Figures for people: the shared formatter (grouped thousands, `toLocaleString("en-US")`'s text, no Intl). */
export { formatNumber };

/** The service counts 1 GB as 1,000 MB (docs/service.md, "Account endpoints": total_bandwidth_gb = mb / 1,000). */
export const MB_PER_GB = 1_000;
export const MB_PER_TB = 1_000_000;

/** A data amount in MB, with the GB figure beside it once it is large enough to read better that way. */
export function formatMegabytes(megabytes: number): string {
	const mb = `${formatNumber(megabytes)} MB`;
	return Math.abs(megabytes) >= MB_PER_GB ? `${mb} (${formatNumber(megabytes / MB_PER_GB)} GB)` : mb;
}

/** Seconds as the largest whole units, e.g. 3600 → "1 h", 90 → "1 min 30 s". */
export function formatSeconds(totalSeconds: number): string {
	if (totalSeconds <= 0) return "0 s";
	const hours = Math.floor(totalSeconds / 3600);
	const minutes = Math.floor((totalSeconds % 3600) / 60);
	const seconds = totalSeconds % 60;
	const parts = [
		hours ? `${hours} h` : "",
		minutes ? `${minutes} min` : "",
		seconds ? `${formatNumber(seconds)} s` : "",
	];
	return parts.filter(Boolean).join(" ");
}
