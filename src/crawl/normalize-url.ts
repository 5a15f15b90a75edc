export { normalizeUrl } from "../common/index.js";

/**
 * The URL a discovered page is fetched at: its journalled (credential-free) address, with its seed's
 * `user:pass@` put back when both are on the same origin — as a browser keeps sending the credentials
 * it was given to the site that asked for them, and to no other.
 */
export function withSeedCredentials(url: string, seedUrl: string): string {
	if (!seedUrl.includes("@")) return url;
	let seed: URL;
	let target: URL;
	try {
		seed = new URL(seedUrl);
		target = new URL(url);
	} catch {
		return url;
	}
	if ((seed.username === "" && seed.password === "") || seed.origin !== target.origin) return url;
	target.username = seed.username;
	target.password = seed.password;
	return target.href;
}
