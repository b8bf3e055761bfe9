package backend

// offer is a server of the last round and the offers made of it since.
type offer struct {
	server  Server
	target  int   // its index in the configuration
	free    int64 // free slots at the probe; -1: unknown load
	offered int64 // times offered first since the probe
}

// room is how many more players the server can be offered first.
func (o *offer) room() int64 { return o.free - o.offered }

// pick appends the answer of one Servers call to dst and counts its first
// server's offer: the first is drawn from the servers with room, weighted
// by room (randN(n) is uniform in [0, n)), or uniformly among those of
// unknown load when none has room; the rest follow in view's order (most
// free at the probe first, unknown last), those without room left out.
// view is in that order; pick runs under the directory's lock.
func pick(view []offer, randN func(int64) int64, dst []Server) ([]Server, error) {
	var total int64
	unknown := 0
	for i := range view {
		if r := view[i].room(); view[i].free >= 0 && r > 0 {
			total += r
		} else if view[i].free < 0 {
			unknown++
		}
	}
	first := -1
	switch {
	case total > 0:
		x := randN(total)
		for i := range view {
			if r := view[i].room(); view[i].free >= 0 && r > 0 {
				if x < r {
					first = i
					break
				}
				x -= r
			}
		}
	case unknown > 0:
		x := randN(int64(unknown))
		for i := range view {
			if view[i].free < 0 {
				if x == 0 {
					first = i
					break
				}
				x--
			}
		}
	default:
		return dst, ErrNoServers
	}
	view[first].offered++
	end := len(dst) + MaxServers
	dst = append(dst, view[first].server)
	for i := range view {
		if len(dst) >= end {
			break
		}
		if i != first && (view[i].free < 0 || view[i].room() > 0) {
			dst = append(dst, view[i].server)
		}
	}
	return dst, nil
}
