/* The loopback device through the netdevice(7) ioctls on a socket:
 * SIOCGIFCONF lists lo with 127.0.0.1, its index, name, flags, MTU,
 * netmask and hardware type; an unknown device is ENODEV, a bad pointer
 * EFAULT. */
#include "sockutil.h"
#include <arpa/inet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <sys/ioctl.h>

static void name_lo(struct ifreq *r)
{
	memset(r, 0, sizeof(*r));
	strcpy(r->ifr_name, "lo");
}

UT_TEST(ifconf_lists_lo_with_its_address)
{
	int s = T_OK(socket(AF_INET, SOCK_DGRAM, 0));
	struct ifconf c = { 0 };
	T_OK(ioctl(s, SIOCGIFCONF, &c));                 /* no buffer: the size */
	T_EXPECT(c.ifc_len >= (int)sizeof(struct ifreq));
	struct ifreq reqs[16];
	c.ifc_len = sizeof(reqs);
	c.ifc_req = reqs;
	T_OK(ioctl(s, SIOCGIFCONF, &c));
	int found = 0;
	for (int i = 0; i < c.ifc_len / (int)sizeof(struct ifreq); i++) {
		struct sockaddr_in *a = (struct sockaddr_in *)&reqs[i].ifr_addr;
		if (!strcmp(reqs[i].ifr_name, "lo") && a->sin_family == AF_INET &&
		    a->sin_addr.s_addr == htonl(INADDR_LOOPBACK))
			found++;
	}
	T_EXPECT_EQ(found, 1);
	close(s);
}

UT_TEST(lo_answers_index_name_flags_mtu_and_mask)
{
	int s = T_OK(socket(AF_INET, SOCK_DGRAM, 0));
	struct ifreq r;
	name_lo(&r);
	T_OK(ioctl(s, SIOCGIFINDEX, &r));
	int idx = r.ifr_ifindex;
	T_EXPECT(idx > 0);
	T_EXPECT_EQ(if_nametoindex("lo"), idx);
	memset(&r, 0, sizeof(r));
	r.ifr_ifindex = idx;
	T_OK(ioctl(s, SIOCGIFNAME, &r));
	T_EXPECT(strcmp(r.ifr_name, "lo") == 0);
	name_lo(&r);
	T_OK(ioctl(s, SIOCGIFFLAGS, &r));
	T_EXPECT((r.ifr_flags & (IFF_UP | IFF_LOOPBACK)) == (IFF_UP | IFF_LOOPBACK));
	name_lo(&r);
	T_OK(ioctl(s, SIOCGIFMTU, &r));
	T_EXPECT(r.ifr_mtu >= 1500);
	name_lo(&r);
	T_OK(ioctl(s, SIOCGIFNETMASK, &r));
	T_EXPECT_EQ(((struct sockaddr_in *)&r.ifr_netmask)->sin_addr.s_addr, htonl(0xff000000));
	name_lo(&r);
	T_OK(ioctl(s, SIOCGIFHWADDR, &r));
	T_EXPECT_EQ(r.ifr_hwaddr.sa_family, ARPHRD_LOOPBACK);
	/* on an AF_UNIX socket too */
	int u = T_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	name_lo(&r);
	T_OK(ioctl(u, SIOCGIFINDEX, &r));
	T_EXPECT_EQ(r.ifr_ifindex, idx);
	close(u);
	close(s);
}

UT_TEST(unknown_devices_and_bad_pointers_fail)
{
	int s = T_OK(socket(AF_INET, SOCK_DGRAM, 0));
	struct ifreq r;
	memset(&r, 0, sizeof(r));
	strcpy(r.ifr_name, "nosuchdev7");
	T_EXPECT_ERRNO(ioctl(s, SIOCGIFFLAGS, &r), ENODEV);
	T_EXPECT_ERRNO(ioctl(s, SIOCGIFINDEX, &r), ENODEV);
	memset(&r, 0, sizeof(r));
	r.ifr_ifindex = 99999;
	T_EXPECT_ERRNO(ioctl(s, SIOCGIFNAME, &r), ENODEV);
	T_EXPECT_ERRNO(ioctl(s, SIOCGIFFLAGS, (void *)1), EFAULT);
	T_EXPECT_ERRNO(ioctl(s, SIOCGIFCONF, (void *)1), EFAULT);
	int v;
	v = -1;
	T_OK(ioctl(s, TIOCOUTQ, &v));
	T_EXPECT_EQ(v, 0);
	close(s);
}

/* Whether /proc/net/NAME has a line containing both strings. */
static int proc_net_has(const char *name, const char *a, const char *b)
{
	char path[64], line[512];
	snprintf(path, sizeof path, "/proc/net/%s", name);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int found = 0;
	while (fgets(line, sizeof line, f))
		found |= strstr(line, a) && (!b || strstr(line, b));
	fclose(f);
	return found;
}

UT_TEST(proc_net_lists_the_device_and_sockets)
{
	T_EXPECT_EQ(proc_net_has("dev", "lo:", NULL), 1);
	T_EXPECT_EQ(proc_net_has("unix", "RefCount", "Path"), 1);
	int l = T_OK(socket(AF_INET, SOCK_STREAM, 0));
	struct sockaddr_in a = { .sin_family = AF_INET };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(a);
	T_OK(bind(l, (struct sockaddr *)&a, sizeof(a)));
	T_OK(listen(l, 1));
	T_OK(getsockname(l, (struct sockaddr *)&a, &len));
	char want[32];
	snprintf(want, sizeof want, "0100007F:%04X", ntohs(a.sin_port));
	T_EXPECT_EQ(proc_net_has("tcp", want, " 0A "), 1);         /* LISTEN */
	int u = T_OK(socket(AF_INET, SOCK_DGRAM, 0));
	a.sin_port = 0;
	T_OK(bind(u, (struct sockaddr *)&a, sizeof(a)));
	len = sizeof(a);
	T_OK(getsockname(u, (struct sockaddr *)&a, &len));
	snprintf(want, sizeof want, "0100007F:%04X", ntohs(a.sin_port));
	T_EXPECT_EQ(proc_net_has("udp", want, " 07 "), 1);         /* unconnected */
	close(u);
	close(l);
}

UT_MAIN
