/** Display names of the product codes (docs/service.md, "Account endpoints"); unknown codes are shown as they are. */
export const PRODUCT_NAMES: Readonly<Record<string, string>> = {
	rp: "Premium Residential",
	rpc: "Core Residential",
	dcp: "Datacenter",
	sdc: "Shared Datacenter",
	mp: "Mobile",
	static_residential: "Static Residential",
	"static-residential": "Static Residential",
};

export function productName(code: string): string {
	return PRODUCT_NAMES[code] ?? code;
}
