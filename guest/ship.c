// SPDX-License-Identifier: GPL-2.0
/*
 * mmlat-ship: copy stdin (the runner's tar of its results) into the memory
 * BAR of QEMU's ivshmem-plain device, which bench/qemu.sh backs with a file
 * that the host reads once the guest has ended.
 *
 * Under icount a boot must take nothing from the host at a host-timed
 * point: a disk does (the kernel reads its partition table at boot, and
 * the read completes whenever the host's I/O thread is done), a serial
 * port does not but moves a few hundred kB/s. The window is guest memory:
 * no I/O, no interrupt, no completion.
 *
 * The window: the header (struct ship_header) at offset 0, the data from
 * SHIP_DATA_OFFSET. The magic is stored last, so a host that finds it
 * finds the whole archive.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHIP_VENDOR		0x1af4	/* Red Hat, Inc. */
#define SHIP_DEVICE		0x1110	/* Inter-VM shared memory */
#define SHIP_BAR		"resource2"
#define SHIP_MAGIC		"mmlatres"
#define SHIP_DATA_OFFSET	4096

struct ship_header {
	char magic[8];
	uint64_t length;	/* bytes of data, little-endian (x86) */
};

static void die(const char *what)
{
	fprintf(stderr, "mmlat-ship: %s: %s\n", what, strerror(errno));
	exit(1);
}

static unsigned long read_hex(const char *dir, const char *name)
{
	char path[512], buf[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return strtoul(buf, NULL, 16);
}

/* The sysfs folder of the first ivshmem device, in path. */
static int find_window(char *path, size_t len)
{
	const char *bus = "/sys/bus/pci/devices";
	struct dirent *d;
	DIR *dir = opendir(bus);

	if (!dir)
		die(bus);
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, len, "%s/%s", bus, d->d_name);
		if (read_hex(path, "vendor") == SHIP_VENDOR &&
		    read_hex(path, "device") == SHIP_DEVICE) {
			closedir(dir);
			return 0;
		}
	}
	closedir(dir);
	return -1;
}

int main(void)
{
	char dev[400], bar[512];
	struct ship_header *h;
	struct stat st;
	size_t used = 0;
	ssize_t n;
	char *win;
	int fd;

	if (find_window(dev, sizeof(dev))) {
		fprintf(stderr, "mmlat-ship: no ivshmem device (%04x:%04x) on the PCI bus\n",
			SHIP_VENDOR, SHIP_DEVICE);
		return 1;
	}
	snprintf(bar, sizeof(bar), "%s/%s", dev, SHIP_BAR);
	fd = open(bar, O_RDWR | O_SYNC);
	if (fd < 0 || fstat(fd, &st))
		die(bar);
	win = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (win == MAP_FAILED)
		die(bar);
	h = (struct ship_header *)win;
	while ((n = read(0, win + SHIP_DATA_OFFSET + used,
			 st.st_size - SHIP_DATA_OFFSET - used)) > 0)
		used += n;
	if (n < 0)
		die("stdin");
	if (SHIP_DATA_OFFSET + used == (size_t)st.st_size) {
		fprintf(stderr, "mmlat-ship: the results fill the whole window (%lld bytes)\n",
			(long long)st.st_size);
		return 1;
	}
	h->length = used;
	__sync_synchronize();
	memcpy(h->magic, SHIP_MAGIC, sizeof(h->magic));
	if (munmap(win, st.st_size))
		die(bar);
	printf("%zu\n", used);
	return 0;
}
