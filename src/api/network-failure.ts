import { NetworkError, type NetworkFailure } from "./errors.js";

const CODE_TO_FAILURE: Readonly<Record<string, NetworkFailure>> = {
	ENOTFOUND: "dns",
	EAI_AGAIN: "dns",
	EAI_NONAME: "dns",
	ECONNREFUSED: "refused",
	ECONNRESET: "reset",
	EPIPE: "reset",
	UND_ERR_SOCKET: "reset",
	UND_ERR_CLOSED: "reset",
	ETIMEDOUT: "timeout",
	UND_ERR_CONNECT_TIMEOUT: "timeout",
	UND_ERR_HEADERS_TIMEOUT: "timeout",
	UND_ERR_BODY_TIMEOUT: "timeout",
	CERT_HAS_EXPIRED: "tls",
	DEPTH_ZERO_SELF_SIGNED_CERT: "tls",
	UNABLE_TO_VERIFY_LEAF_SIGNATURE: "tls",
	ERR_TLS_CERT_ALTNAME_INVALID: "tls",
	SELF_SIGNED_CERT_IN_CHAIN: "tls",
	UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "tls",
	CERT_NOT_YET_VALID: "tls",
};

/**
 * OpenSSL's handshake errors (`ERR_SSL_WRONG_VERSION_NUMBER`: an https:// address where plain HTTP
 * listens) are TLS failures too: left as `other`, the health check let such a run start and wait out
 * its outage_timeout instead of ending it at once.
 */
function isTlsCode(code: string): boolean {
	return code.startsWith("ERR_SSL_") || code.startsWith("ERR_TLS_");
}

function failureOf(code: string): NetworkFailure {
	return CODE_TO_FAILURE[code] ?? (isTlsCode(code) ? "tls" : "other");
}

const FAILURE_TEXT: Readonly<Record<NetworkFailure, string>> = {
	dns: "the host name did not resolve",
	refused: "connection refused",
	reset: "connection dropped",
	timeout: "timed out",
	tls: "TLS failure (certificate or handshake)",
	other: "network error",
};

function errorCode(error: unknown): string | undefined {
	let current: unknown = error;
	// undici wraps the socket error; the useful code may sit one or two causes down.
	for (let depth = 0; depth < 4 && current && typeof current === "object"; depth += 1) {
		const code = (current as { code?: unknown }).code;
		if (typeof code === "string" && (code in CODE_TO_FAILURE || isTlsCode(code))) return code;
		current = (current as { cause?: unknown }).cause;
	}
	return undefined;
}

/** Translate whatever undici or the socket threw into a `NetworkError` with a failure kind. */
export function toNetworkError(error: unknown, endpoint: string, host?: string): NetworkError {
	const code = errorCode(error);
	const failure: NetworkFailure = code ? failureOf(code) : "other";
	const text = error instanceof Error ? error.message : String(error);
	const described = code ? `${FAILURE_TEXT[failure]} (${code})` : text || FAILURE_TEXT[failure];
	return new NetworkError(failure, endpoint, described, { cause: error, ...(host ? { host } : {}) });
}
