/**
 * Numbers for people, as `value.toLocaleString("en-US", { maximumFractionDigits })` writes them
 * (grouped thousands, at most `maxDecimals` decimals, halves rounded away from zero, trailing zeros
 * dropped), without Intl: the first `toLocaleString` of a process pages in ICU's number data, ~9 MB
 * of resident memory for the rest of a run's life (it was the last jump of every run's peak, when
 * the report was written).
 */
export function formatNumber(value: number, maxDecimals = 2): string {
	if (Number.isNaN(value)) return "NaN";
	if (!Number.isFinite(value)) return value > 0 ? "∞" : "-∞";
	const sign = value < 0 || Object.is(value, -0) ? "-" : "";
	const [whole, fraction] = plainDecimal(Math.abs(value));
	let digits = whole;
	let decimals = fraction;
	if (decimals.length > maxDecimals) {
		// Round on the shortest decimal that reads back as the number (as ICU does), not on its binary value.
		const up = decimals.charCodeAt(maxDecimals) >= 0x35; /* "5" */
		const kept = BigInt(`${whole}${decimals.slice(0, maxDecimals)}`) + (up ? 1n : 0n);
		const text = kept.toString().padStart(maxDecimals + 1, "0");
		digits = text.slice(0, text.length - maxDecimals);
		decimals = text.slice(text.length - maxDecimals);
	}
	decimals = decimals.replace(/0+$/, "");
	const grouped = digits.replace(/\B(?=(\d{3})+$)/g, ",");
	return `${sign}${grouped}${decimals ? `.${decimals}` : ""}`;
}

/** The shortest decimal that reads back as `value` (≥ 0), as whole and fraction digits, never in exponent form. */
function plainDecimal(value: number): [string, string] {
	const text = String(value);
	const exponentAt = text.indexOf("e");
	if (exponentAt < 0) {
		const point = text.indexOf(".");
		return point < 0 ? [text, ""] : [text.slice(0, point), text.slice(point + 1)];
	}
	const exponent = Number(text.slice(exponentAt + 1));
	const mantissa = text.slice(0, exponentAt).replace(".", "");
	const pointAfter = 1 + exponent;
	if (pointAfter >= mantissa.length) return [mantissa.padEnd(pointAfter, "0"), ""];
	// Only tiny numbers get here (large ones have more digits than the mantissa): all fraction.
	return ["0", `${"0".repeat(-pointAfter)}${mantissa}`];
}
