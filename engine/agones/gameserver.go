package agones

import (
	"fmt"
	"net/netip"
	"strings"
)

// GameServer states, as GameServerStatus.State reports them (agones
// pkg/apis/agones/v1/gameserver.go).
const (
	StateScheduled    = "Scheduled"
	StateRequestReady = "RequestReady"
	StateReady        = "Ready"
	StateReserved     = "Reserved"
	StateAllocated    = "Allocated"
	StateShutdown     = "Shutdown"
	StateUnhealthy    = "Unhealthy"
)

// Node address types in GameServerStatus.Addresses (Kubernetes
// NodeAddressType, plus Agones' PodIP).
const (
	AddressExternalIP  = "ExternalIP"
	AddressInternalIP  = "InternalIP"
	AddressExternalDNS = "ExternalDNS"
	AddressInternalDNS = "InternalDNS"
	AddressHostname    = "Hostname"
	AddressPodIP       = "PodIP"
)

// GameServer is the part of the Kubernetes GameServer the gateway exports,
// as GET /gameserver returns it (sdkGameServer in
// sdks/swagger/sdk.swagger.json).
type GameServer struct {
	ObjectMeta ObjectMeta
	Health     Health // spec.health
	Status     GameServerStatus
}

// ObjectMeta is the GameServer's Kubernetes metadata.
type ObjectMeta struct {
	Name            string
	Namespace       string
	UID             string
	ResourceVersion string
	Generation      int64
	// CreationTimestamp and DeletionTimestamp are Unix seconds (0 if unset).
	CreationTimestamp int64
	DeletionTimestamp int64
	Labels            map[string]string
	Annotations       map[string]string
}

// Health is the GameServer's health checking configuration: Health must be
// called more often than every PeriodSeconds.
type Health struct {
	Disabled            bool
	PeriodSeconds       int32
	FailureThreshold    int32
	InitialDelaySeconds int32
}

// GameServerStatus is the GameServer's state and connection details.
type GameServerStatus struct {
	State string // one of the State constants
	// Address is the node's address for players: its ExternalDNS name if it
	// has one, else ExternalIP, InternalDNS, InternalIP (agones
	// pkg/gameservers/gameservers.go address).
	Address   string
	Addresses []NodeAddress
	Ports     []Port
	// Players is the alpha player tracking status; nil when the gateway
	// sent none.
	Players  *PlayerStatus
	Counters map[string]Counter
	Lists    map[string]List
}

// NodeAddress is one entry of GameServerStatus.Addresses.
type NodeAddress struct {
	Type    string // one of the Address constants
	Address string
}

// Port is a named host port of the GameServer.
type Port struct {
	Name string
	Port int32
}

// PlayerStatus is the alpha player tracking status.
type PlayerStatus struct {
	Count    int64
	Capacity int64
	IDs      []string
}

// PublicAddrPort returns where clients reach this game server, for connect
// tokens: the port named portName in Status.Ports (the first port when
// portName is ""), and Status.Address when it is an IP. Netcode tokens hold
// IPs, so when Status.Address is a DNS name the first ExternalIP of
// Status.Addresses is used, else the first InternalIP.
func (gs *GameServer) PublicAddrPort(portName string) (netip.AddrPort, error) {
	port, err := gs.port(portName)
	if err != nil {
		return netip.AddrPort{}, err
	}
	addr, err := gs.publicAddr()
	if err != nil {
		return netip.AddrPort{}, err
	}
	return netip.AddrPortFrom(addr, port), nil
}

func (gs *GameServer) port(name string) (uint16, error) {
	ports := gs.Status.Ports
	if len(ports) == 0 {
		return 0, fmt.Errorf("agones: GameServer %q status has no ports (state %q)", gs.ObjectMeta.Name, gs.Status.State)
	}
	i := 0
	if name != "" {
		i = -1
		for j, p := range ports {
			if p.Name == name {
				i = j
				break
			}
		}
		if i < 0 {
			names := make([]string, 0, min(len(ports), 8))
			for _, p := range ports[:min(len(ports), 8)] {
				names = append(names, fmt.Sprintf("%q", p.Name))
			}
			return 0, fmt.Errorf("agones: GameServer %q has no port named %q; it has %s", gs.ObjectMeta.Name, name, strings.Join(names, ", "))
		}
	}
	p := ports[i]
	if p.Port < 1 || p.Port > 65535 {
		return 0, fmt.Errorf("agones: GameServer %q port %q is %d; want 1 to 65535", gs.ObjectMeta.Name, p.Name, p.Port)
	}
	return uint16(p.Port), nil
}

func (gs *GameServer) publicAddr() (netip.Addr, error) {
	if a, ok := usableIP(gs.Status.Address); ok {
		return a, nil
	}
	for _, typ := range [...]string{AddressExternalIP, AddressInternalIP} {
		for _, na := range gs.Status.Addresses {
			if na.Type != typ {
				continue
			}
			if a, ok := usableIP(na.Address); ok {
				return a, nil
			}
		}
	}
	return netip.Addr{}, fmt.Errorf("agones: GameServer %q status.address %q is not an IP and status.addresses has no usable %s or %s", gs.ObjectMeta.Name, excerpt([]byte(gs.Status.Address), 80), AddressExternalIP, AddressInternalIP)
}

// usableIP parses s as an IP a client can dial: no zone, not unspecified,
// not multicast; IPv4-mapped IPv6 is unmapped.
func usableIP(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	a = a.Unmap()
	if a.IsUnspecified() || a.IsMulticast() {
		return netip.Addr{}, false
	}
	return a, true
}
