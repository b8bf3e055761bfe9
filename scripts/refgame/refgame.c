/*
    refgame: a game-shaped dedicated server on the C reference netcode
    library, shaped like the Go project's bench.GameServer in manual mode
    (bench/game.go runManual), so that `netbench -mode game -target ADDR`
    can load it.

    Every tick (TICKHZ, default 60) it sends every connected client one
    snapshot of SNAPSHOTBYTES (default 300):

        bytes 0-7    the tick's send time, Unix nanoseconds (CLOCK_REALTIME),
                     read once per tick as the server starts sending it
        bytes 8-15   the tick number: tick intervals since the server's start
                     (a skipped tick is a gap)
        bytes 16-23  the client's latest input's stamp sequence (the input's
                     bytes 8-15)
        the rest     filler: byte i = i & 0xff

    all little endian. Between ticks it reads the clients' inputs about
    8 times per tick interval (netcode_server_update, then
    netcode_server_receive_packet for every connected client), and at each
    tick before sending. If it falls more than one tick behind it skips
    ticks; the tick number keeps counting wall time.

    usage: refgame ADDR KEYHEX PROTOCOLHEX MAXCLIENTS [TICKHZ [SNAPSHOTBYTES [SECONDS]]]
*/

#include "netcode.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define READS_PER_TICK 8
#define STAMP_BYTES 16
#define INPUT_OFFSET STAMP_BYTES

static volatile sig_atomic_t quit = 0;

static void on_signal( int sig ) { (void) sig; quit = 1; }

static int64_t clock_ns( clockid_t id )
{
    struct timespec ts;
    clock_gettime( id, &ts );
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t mono_ns( void ) { return clock_ns( CLOCK_MONOTONIC ); }

static void sleep_until( int64_t t )
{
    struct timespec ts;
    ts.tv_sec = (time_t) ( t / 1000000000 );
    ts.tv_nsec = (long) ( t % 1000000000 );
    clock_nanosleep( CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL ); // EINTR: the loop checks quit
}

static void put_u64le( uint8_t * p, uint64_t v )
{
    int i;
    for ( i = 0; i < 8; i++ )
        p[i] = (uint8_t) ( v >> ( 8 * i ) );
}

static uint64_t get_u64le( const uint8_t * p )
{
    uint64_t v = 0;
    int i;
    for ( i = 7; i >= 0; i-- )
        v = ( v << 8 ) | p[i];
    return v;
}

struct game
{
    struct netcode_server_t * server;
    int max_clients;
    int * active;          // connected slots
    int num_active;
    int * pos;             // slot -> index in active, -1: not connected
    uint64_t * last_input; // slot -> latest input's stamp sequence
    uint8_t * snap;
    int snap_bytes;
    int64_t time_epoch;    // monotonic ns: the library's time 0
    uint64_t inputs, short_inputs, snapshots, ticks, skipped;
    int64_t tick_ns_sum, tick_ns_max;
    uint64_t tick_count;   // ticks in the current report interval
};

static void on_connect_disconnect( void * context, int i, int connected )
{
    struct game * g = (struct game *) context;
    if ( i < 0 || i >= g->max_clients )
        return;
    if ( connected )
    {
        if ( g->pos[i] < 0 )
        {
            g->pos[i] = g->num_active;
            g->active[g->num_active++] = i;
            g->last_input[i] = 0;
        }
    }
    else if ( g->pos[i] >= 0 )
    {
        int p = g->pos[i];
        int last = g->active[g->num_active - 1];
        g->active[p] = last;
        g->pos[last] = p;
        g->num_active--;
        g->pos[i] = -1;
    }
}

// drain runs the library's update (reads the socket until it is empty,
// sends keep-alives, times out clients) and takes every connected client's
// queued inputs.
static void drain( struct game * g, int64_t now )
{
    netcode_server_update( g->server, (double) ( now - g->time_epoch ) / 1e9 );
    int j;
    for ( j = 0; j < g->num_active; j++ )
    {
        int i = g->active[j];
        while ( 1 )
        {
            int bytes;
            uint64_t sequence;
            uint8_t * packet = netcode_server_receive_packet( g->server, i, &bytes, &sequence );
            if ( !packet )
                break;
            g->inputs++;
            if ( bytes >= STAMP_BYTES )
                g->last_input[i] = get_u64le( packet + 8 );
            else
                g->short_inputs++;
            netcode_server_free_packet( g->server, packet );
        }
    }
}

// tick sends every connected client its snapshot of tick k. start is when
// the tick began (before the drain that read its inputs).
static void tick( struct game * g, int64_t start, uint64_t k )
{
    int64_t stamp = clock_ns( CLOCK_REALTIME );
    put_u64le( g->snap, (uint64_t) stamp );
    put_u64le( g->snap + 8, k );
    int has_input = g->snap_bytes >= INPUT_OFFSET + 8;
    int j;
    for ( j = 0; j < g->num_active; j++ )
    {
        int i = g->active[j];
        if ( has_input )
            put_u64le( g->snap + INPUT_OFFSET, g->last_input[i] );
        netcode_server_send_packet( g->server, i, g->snap, g->snap_bytes );
    }
    g->snapshots += (uint64_t) g->num_active;
    g->ticks++;
    int64_t d = mono_ns() - start;
    g->tick_ns_sum += d;
    if ( d > g->tick_ns_max )
        g->tick_ns_max = d;
    g->tick_count++;
}

static int parse_key( const char * s, uint8_t * key )
{
    if ( strlen( s ) != 2 * NETCODE_KEY_BYTES )
        return 0;
    int i;
    for ( i = 0; i < NETCODE_KEY_BYTES; i++ )
    {
        unsigned int b;
        char pair[3] = { s[2*i], s[2*i+1], 0 };
        char * end;
        b = (unsigned int) strtoul( pair, &end, 16 );
        if ( *end != 0 || pair[0] == '+' || pair[0] == '-' || pair[0] == ' ' )
            return 0;
        key[i] = (uint8_t) b;
    }
    return 1;
}

static void usage( void )
{
    fprintf( stderr, "usage: refgame ADDR KEYHEX PROTOCOLHEX MAXCLIENTS [TICKHZ [SNAPSHOTBYTES [SECONDS]]]\n"
                     "  ADDR           e.g. 127.0.0.1:40000\n"
                     "  KEYHEX         32-byte private key, 64 hex digits (netbench -key)\n"
                     "  PROTOCOLHEX    protocol id in hex (netbench -protocol; its default is 6e6574626e6368)\n"
                     "  MAXCLIENTS     slots, 1 to %d\n"
                     "  TICKHZ         tick rate, more than 0 and at most 1000 (default 60)\n"
                     "  SNAPSHOTBYTES  %d to %d (default 300; netbench -size)\n"
                     "  SECONDS        stop after this long (default 0: until SIGINT/SIGTERM)\n",
                     NETCODE_MAX_CLIENTS, STAMP_BYTES, NETCODE_MAX_PACKET_SIZE );
}

int main( int argc, char ** argv )
{
    if ( argc < 5 || argc > 8 )
    {
        usage();
        return 2;
    }
    // installed first: a signal during the server's setup still stops it
    struct sigaction sa;
    memset( &sa, 0, sizeof( sa ) );
    sa.sa_handler = on_signal;
    sigemptyset( &sa.sa_mask );
    sigaction( SIGINT, &sa, NULL );
    sigaction( SIGTERM, &sa, NULL );

    const char * address = argv[1];
    uint8_t key[NETCODE_KEY_BYTES];
    if ( !parse_key( argv[2], key ) )
    {
        fprintf( stderr, "refgame: key must be 64 hex digits\n" );
        return 2;
    }
    char * end;
    const char * proto = argv[3];
    if ( proto[0] == '0' && ( proto[1] == 'x' || proto[1] == 'X' ) )
        proto += 2;
    errno = 0;
    uint64_t protocol_id = strtoull( proto, &end, 16 );
    if ( *proto == 0 || *end != 0 || errno != 0 )
    {
        fprintf( stderr, "refgame: bad protocol id %s\n", argv[3] );
        return 2;
    }
    long max_clients = strtol( argv[4], &end, 10 );
    if ( *end != 0 || max_clients < 1 || max_clients > NETCODE_MAX_CLIENTS )
    {
        fprintf( stderr, "refgame: max clients must be 1 to %d\n", NETCODE_MAX_CLIENTS );
        return 2;
    }
    double hz = 60.0;
    if ( argc > 5 )
    {
        hz = strtod( argv[5], &end );
        if ( *end != 0 || !( hz > 0 && hz <= 1000 ) )
        {
            fprintf( stderr, "refgame: tick rate must be more than 0 and at most 1000\n" );
            return 2;
        }
    }
    long snap_bytes = 300;
    if ( argc > 6 )
    {
        snap_bytes = strtol( argv[6], &end, 10 );
        if ( *end != 0 || snap_bytes < STAMP_BYTES || snap_bytes > NETCODE_MAX_PACKET_SIZE )
        {
            fprintf( stderr, "refgame: snapshot bytes must be %d to %d\n", STAMP_BYTES, NETCODE_MAX_PACKET_SIZE );
            return 2;
        }
    }
    double seconds = 0;
    if ( argc > 7 )
    {
        seconds = strtod( argv[7], &end );
        if ( *end != 0 || seconds < 0 )
        {
            fprintf( stderr, "refgame: bad seconds %s\n", argv[7] );
            return 2;
        }
    }

    struct game g;
    memset( &g, 0, sizeof( g ) );
    g.max_clients = (int) max_clients;
    g.active = (int *) malloc( sizeof( int ) * (size_t) max_clients );
    g.pos = (int *) malloc( sizeof( int ) * (size_t) max_clients );
    g.last_input = (uint64_t *) calloc( (size_t) max_clients, sizeof( uint64_t ) );
    g.snap_bytes = (int) snap_bytes;
    g.snap = (uint8_t *) malloc( (size_t) snap_bytes );
    if ( !g.active || !g.pos || !g.last_input || !g.snap )
    {
        fprintf( stderr, "refgame: out of memory\n" );
        return 1;
    }
    int i;
    for ( i = 0; i < max_clients; i++ )
        g.pos[i] = -1;
    for ( i = 0; i < snap_bytes; i++ )
        g.snap[i] = (uint8_t) i;

    if ( netcode_init() != NETCODE_OK )
    {
        fprintf( stderr, "refgame: netcode_init failed\n" );
        return 1;
    }
    netcode_log_level( getenv( "REFGAME_LOG_INFO" ) ? NETCODE_LOG_LEVEL_INFO : NETCODE_LOG_LEVEL_ERROR );

    struct netcode_server_config_t config;
    netcode_default_server_config( &config );
    config.protocol_id = protocol_id;
    memcpy( config.private_key, key, NETCODE_KEY_BYTES );
    config.callback_context = &g;
    config.connect_disconnect_callback = on_connect_disconnect;

    g.time_epoch = mono_ns();
    g.server = netcode_server_create( address, &config, 0.0 );
    if ( !g.server )
    {
        fprintf( stderr, "refgame: failed to create server on %s (error %d)\n", address, netcode_server_create_error() );
        return 1;
    }
    netcode_server_start( g.server, (int) max_clients );

    int64_t interval = (int64_t) ( 1e9 / hz );
    if ( interval < 1 )
        interval = 1;
    int64_t every = interval / READS_PER_TICK;
    int64_t epoch = mono_ns();
    int64_t stop_at = seconds > 0 ? epoch + (int64_t) ( seconds * 1e9 ) : 0;
    uint64_t next_tick = 0;
    int64_t next_read = epoch;
    int64_t next_report = epoch + 1000000000;

    printf( "refgame: %s, protocol %" PRIx64 ", %ld slots (NETCODE_MAX_CLIENTS %d), %g Hz, %ld-byte snapshots\n",
            address, protocol_id, max_clients, NETCODE_MAX_CLIENTS, hz, snap_bytes );
    fflush( stdout );

    uint64_t last_ticks = 0, last_inputs = 0, last_snaps = 0, last_skipped = 0;
    while ( !quit )
    {
        int64_t now = mono_ns();
        if ( stop_at && now >= stop_at )
            break;
        int64_t deadline = epoch + (int64_t) next_tick * interval;
        if ( now >= deadline )
        {
            // tickClock.due: a tick more than an interval late skips to
            // the current one; the number still counts wall time
            uint64_t k = next_tick;
            uint64_t cur = (uint64_t) ( ( now - epoch ) / interval );
            if ( cur > k )
            {
                g.skipped += cur - k;
                k = cur;
            }
            next_tick = k + 1;
            drain( &g, now );
            tick( &g, now, k );
            next_read = now + every;
        }
        else if ( now >= next_read )
        {
            drain( &g, now );
            next_read = now + every;
        }
        if ( now >= next_report )
        {
            printf( "refgame: %d connected, %" PRIu64 " ticks (%" PRIu64 " skipped), %" PRIu64 " inputs, %" PRIu64 " snapshots; tick mean %.1f us max %.1f us\n",
                    g.num_active, g.ticks - last_ticks, g.skipped - last_skipped, g.inputs - last_inputs, g.snapshots - last_snaps,
                    g.tick_count ? (double) g.tick_ns_sum / (double) g.tick_count / 1e3 : 0.0, (double) g.tick_ns_max / 1e3 );
            fflush( stdout );
            last_ticks = g.ticks; last_inputs = g.inputs; last_snaps = g.snapshots; last_skipped = g.skipped;
            g.tick_ns_sum = 0; g.tick_ns_max = 0; g.tick_count = 0;
            next_report += 1000000000;
            if ( next_report <= now )
                next_report = now + 1000000000;
        }
        int64_t wake = epoch + (int64_t) next_tick * interval;
        if ( next_read < wake )
            wake = next_read;
        if ( stop_at && stop_at < wake )
            wake = stop_at;
        if ( wake > mono_ns() )
            sleep_until( wake );
    }

    printf( "refgame: done: %" PRIu64 " ticks, %" PRIu64 " skipped, %" PRIu64 " inputs (%" PRIu64 " shorter than a stamp), %" PRIu64 " snapshots\n",
            g.ticks, g.skipped, g.inputs, g.short_inputs, g.snapshots );
    fflush( stdout );

    netcode_server_destroy( g.server );
    netcode_term();
    free( g.active );
    free( g.pos );
    free( g.last_input );
    free( g.snap );
    return 0;
}
