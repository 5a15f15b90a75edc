/** The host a target is fetched from, as the host gate keys it (`new URL(url).host`). */
export function hostOf(url: string): string {
	try {
		return new URL(url).host;
	} catch {
		return url;
	}
}
