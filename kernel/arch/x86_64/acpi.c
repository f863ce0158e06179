/*
 * ACPI tables: RSDP -> RSDT/XSDT -> MADT (CPUs, I/O APIC, interrupt source
 * overrides) and FADT (PM1a control port; SLP_TYPa of \_S5_ from the DSDT,
 * for power-off).  Tables are read through the direct map.
 */
#include "kernel.h"
#include "apic.h"
#include "vm.h"

struct acpi_info acpi;

struct rsdp {
	char sig[8];
	uint8_t checksum;
	char oem[6];
	uint8_t rev;
	uint32_t rsdt;
	uint32_t length;
	uint64_t xsdt;
	uint8_t xchecksum, rsvd[3];
} __packed;

struct sdt {
	char sig[4];
	uint32_t length;
	uint8_t rev, checksum;
	char oem[6], oem_table[8];
	uint32_t oem_rev, creator, creator_rev;
} __packed;

static bool checksum_ok(const void *p, size_t n)
{
	uint8_t sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += ((const uint8_t *)p)[i];
	return sum == 0;
}

static const struct rsdp *scan_rsdp(paddr_t start, size_t len)
{
	for (paddr_t pa = start; pa + sizeof(struct rsdp) <= start + len; pa += 16) {
		const struct rsdp *r = P2V(pa);
		if (!memcmp(r->sig, "RSD PTR ", 8) && checksum_ok(r, 20))
			return r;
	}
	return NULL;
}

static const struct rsdp *find_rsdp(void)
{
	paddr_t ebda = (paddr_t)(*(uint16_t *)P2V(0x40e)) << 4;
	const struct rsdp *r = NULL;
	if (ebda >= 0x80000 && ebda < 0xa0000)
		r = scan_rsdp(ebda, 1024);
	return r ? r : scan_rsdp(0xe0000, 0x20000);
}

static void parse_madt(const struct sdt *t)
{
	const uint8_t *p = (const uint8_t *)t;
	acpi.lapic_phys = *(const uint32_t *)(p + 36);
	for (uint32_t off = 44; off + 2 <= t->length;) {
		uint8_t type = p[off], len = p[off + 1];
		if (len < 2)
			break;
		const uint8_t *e = p + off;
		switch (type) {
		case 0: {   /* processor local APIC */
			uint32_t flags = *(const uint32_t *)(e + 4);
			if ((flags & 1) && acpi.ncpu < NCPU_MAX)
				acpi.apic_ids[acpi.ncpu++] = e[3];
			else if (flags & 1)
				kprintf("concerto: warning: more than %d CPUs, APIC %u ignored\n",
					NCPU_MAX, e[3]);
			break;
		}
		case 1:     /* I/O APIC: use the first */
			if (!acpi.ioapic_phys) {
				acpi.ioapic_phys = *(const uint32_t *)(e + 4);
				acpi.ioapic_gsi_base = *(const uint32_t *)(e + 8);
			}
			break;
		case 2: {   /* interrupt source override */
			uint8_t irq = e[3];
			if (irq < 16) {
				acpi.irq_to_gsi[irq] = *(const uint32_t *)(e + 4);
				acpi.irq_flags[irq] = *(const uint16_t *)(e + 8);
			}
			break;
		}
		case 5:     /* 64-bit local APIC address override */
			acpi.lapic_phys = *(const uint64_t *)(e + 4);
			break;
		}
		off += len;
	}
}

/* Finds "_S5_" in the DSDT's AML and reads the first package element. */
static void parse_s5(const struct sdt *dsdt)
{
	const uint8_t *p = (const uint8_t *)dsdt;
	for (uint32_t i = sizeof(*dsdt); i + 8 < dsdt->length; i++) {
		if (memcmp(p + i, "_S5_", 4) || p[i + 4] != 0x12)   /* PackageOp */
			continue;
		const uint8_t *q = p + i + 5;
		q += ((*q & 0xc0) >> 6) + 1;    /* PkgLength */
		q++;                            /* NumElements */
		if (*q == 0x0a)                 /* BytePrefix */
			q++;
		else if (*q > 1)                /* only ZeroOp/OneOp otherwise */
			return;
		acpi.slp_typa_s5 = *q;
		acpi.have_s5 = true;
		return;
	}
}

static void parse_fadt(const struct sdt *t)
{
	const uint8_t *p = (const uint8_t *)t;
	acpi.pm1a_cnt = (uint16_t)*(const uint32_t *)(p + 64);
	uint64_t dsdt = *(const uint32_t *)(p + 40);
	if (t->length >= 148 && *(const uint64_t *)(p + 140))
		dsdt = *(const uint64_t *)(p + 140);
	if (dsdt)
		parse_s5(P2V(dsdt));
}

static void visit(paddr_t pa)
{
	const struct sdt *t = P2V(pa);
	if (!checksum_ok(t, t->length)) {
		kprintf("concerto: warning: ACPI table %.4s has a bad checksum\n", t->sig);
		return;
	}
	if (!memcmp(t->sig, "APIC", 4))
		parse_madt(t);
	else if (!memcmp(t->sig, "FACP", 4))
		parse_fadt(t);
}

void acpi_init(void)
{
	for (int i = 0; i < 16; i++)
		acpi.irq_to_gsi[i] = i;
	const struct rsdp *r = find_rsdp();
	if (!r)
		panic("ACPI: no RSDP found");
	bool x = r->rev >= 2 && r->xsdt;
	const struct sdt *root = P2V(x ? r->xsdt : r->rsdt);
	size_t esz = x ? 8 : 4;
	size_t n = (root->length - sizeof(*root)) / esz;
	const uint8_t *ents = (const uint8_t *)(root + 1);
	for (size_t i = 0; i < n; i++)
		visit(x ? *(const uint64_t *)(ents + i * 8) : *(const uint32_t *)(ents + i * 4));
	if (acpi.ncpu == 0)
		panic("ACPI: the MADT lists no usable CPU");
}
