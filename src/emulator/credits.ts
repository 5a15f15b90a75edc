/**
 * The account's scraper credits. A fetch reserves its mode's worst-case cost before it starts and
 * commits the actual cost when it ends (0 unless it succeeded), with no await in between — so
 * concurrent fetches can never drive the balance below zero.
 */
export class CreditAccount {
	#balance: number;
	#reserved = 0;

	constructor(balance: number) {
		this.#balance = balance;
	}

	/** Credits on the account now (reservations not deducted). */
	get balance(): number {
		return this.#balance;
	}

	/** Credits not held by running fetches. */
	get available(): number {
		return Math.max(0, this.#balance - this.#reserved);
	}

	set(balance: number): void {
		this.#balance = balance;
	}

	/** Hold `amount` credits; false when not enough are available. */
	tryReserve(amount: number): boolean {
		if (this.available < amount) return false;
		this.#reserved += amount;
		return true;
	}

	/** Release a reservation of `reserved` and charge `charged` (≤ reserved, 0 for a failed fetch). */
	settle(reserved: number, charged: number): void {
		this.#reserved = Math.max(0, this.#reserved - reserved);
		// Floating-point credits (e.g. 847.5) must not drift into 1e-13 leftovers.
		this.#balance = Math.max(0, Math.round((this.#balance - charged) * 1e6) / 1e6);
	}
}
