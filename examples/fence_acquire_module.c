/*
 * An experiment for ADR 0014, not part of the library: the fenced acquire as
 * a Redis module command instead of a Lua script, to measure what a native
 * command would cost the server. Built and loaded by hand:
 *
 *   cc -O2 -shared -fPIC -o fence_acquire.so examples/fence_acquire_module.c
 *   cargo run --release --example throughput -- --only module --module fence_acquire.so
 *   (or: redis-server --loadmodule ./fence_acquire.so; FENCE.ACQUIRE key fence owner ttl-ms)
 *
 * Same contract as src/scripts/lock_acquire.lua on a winning or a refused
 * call: nil when the lock key exists, WRONGTYPE when it is not a string,
 * otherwise the counter is incremented (an error, and nothing written, when
 * it is not a canonical integer that INCR could advance to at least 1) and the
 * key is set to the owner with the TTL; the reply is the new token.
 * tests/library/module_experiment.rs builds it and holds it to that contract.
 *
 * The few module-API entry points it uses are declared here by their
 * documented signatures and fetched by name through the function the server
 * passes in the context, which is how every module binds the API.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct RedisModuleCtx RedisModuleCtx;
typedef struct RedisModuleKey RedisModuleKey;
typedef struct RedisModuleString RedisModuleString;
typedef int (*CommandFn)(RedisModuleCtx *, RedisModuleString **, int);

#define API_VERSION 1
#define OPEN_READ (1 << 0)
#define OPEN_WRITE (1 << 1)
#define TYPE_EMPTY 0
#define TYPE_STRING 1

static int (*GetApi)(const char *, void *);
static int (*SetModuleAttribs)(RedisModuleCtx *, const char *, int, int);
static int (*CreateCommand)(RedisModuleCtx *, const char *, CommandFn, const char *, int, int, int);
static int (*WrongArity)(RedisModuleCtx *);
static RedisModuleKey *(*OpenKey)(RedisModuleCtx *, RedisModuleString *, int);
static void (*CloseKey)(RedisModuleKey *);
static int (*KeyType)(RedisModuleKey *);
static char *(*StringDMA)(RedisModuleKey *, size_t *, int);
static int (*StringSet)(RedisModuleKey *, RedisModuleString *);
static int (*SetExpire)(RedisModuleKey *, long long);
static int (*StringToLongLong)(RedisModuleString *, long long *);
static RedisModuleString *(*CreateStringFromLongLong)(RedisModuleCtx *, long long);
static void (*FreeString)(RedisModuleCtx *, RedisModuleString *);
static int (*ReplicateVerbatim)(RedisModuleCtx *);
static int (*ReplyWithLongLong)(RedisModuleCtx *, long long);
static int (*ReplyWithNull)(RedisModuleCtx *);
static int (*ReplyWithError)(RedisModuleCtx *, const char *);

#define BIND(name) \
    if (GetApi("RedisModule_" #name, (void *)&name) != 0) return 1

/* A canonical decimal in 0..LLONG_MAX - 1 (what INCR can advance to >= 1). */
static int counter_from(const char *text, size_t len, long long *out) {
    char buf[24];
    if (len == 0 || len >= sizeof buf) return 0;
    if (len > 1 && text[0] == '0') return 0;
    for (size_t i = 0; i < len; i++)
        if (text[i] < '0' || text[i] > '9') return 0;
    memcpy(buf, text, len);
    buf[len] = '\0';
    errno = 0;
    long long n = strtoll(buf, NULL, 10);
    if (errno != 0 || n == LLONG_MAX) return 0;
    *out = n;
    return 1;
}

static int acquire(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc != 5) return WrongArity(ctx);
    long long ttl;
    if (StringToLongLong(argv[4], &ttl) != 0 || ttl <= 0) return ReplyWithError(ctx, "ERR ttl must be a positive integer");
    RedisModuleKey *lock = OpenKey(ctx, argv[1], OPEN_READ | OPEN_WRITE);
    int held = KeyType(lock);
    if (held != TYPE_EMPTY) {
        CloseKey(lock);
        if (held == TYPE_STRING) return ReplyWithNull(ctx);
        return ReplyWithError(ctx, "WRONGTYPE Operation against a key holding the wrong kind of value");
    }
    RedisModuleKey *fence = OpenKey(ctx, argv[2], OPEN_READ | OPEN_WRITE);
    long long last = 0;
    int kind = KeyType(fence);
    if (kind == TYPE_STRING) {
        size_t len;
        const char *text = StringDMA(fence, &len, OPEN_READ);
        if (!counter_from(text, len, &last)) {
            CloseKey(fence);
            CloseKey(lock);
            return ReplyWithError(ctx, "CORRUPT fence counter is not an integer INCR can advance");
        }
    } else if (kind != TYPE_EMPTY) {
        CloseKey(fence);
        CloseKey(lock);
        return ReplyWithError(ctx, "WRONGTYPE Operation against a key holding the wrong kind of value");
    }
    RedisModuleString *token = CreateStringFromLongLong(ctx, last + 1);
    StringSet(fence, token);
    FreeString(ctx, token);
    StringSet(lock, argv[3]);
    SetExpire(lock, ttl);
    CloseKey(fence);
    CloseKey(lock);
    ReplicateVerbatim(ctx);
    return ReplyWithLongLong(ctx, last + 1);
}

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv;
    (void)argc;
    GetApi = (int (*)(const char *, void *))((void **)ctx)[0];
    BIND(SetModuleAttribs);
    BIND(CreateCommand);
    BIND(WrongArity);
    BIND(OpenKey);
    BIND(CloseKey);
    BIND(KeyType);
    BIND(StringDMA);
    BIND(StringSet);
    BIND(SetExpire);
    BIND(StringToLongLong);
    BIND(CreateStringFromLongLong);
    BIND(FreeString);
    BIND(ReplicateVerbatim);
    BIND(ReplyWithLongLong);
    BIND(ReplyWithNull);
    BIND(ReplyWithError);
    SetModuleAttribs(ctx, "fence", 1, API_VERSION);
    return CreateCommand(ctx, "fence.acquire", acquire, "write deny-oom", 1, 2, 1) == 0 ? 0 : 1;
}
