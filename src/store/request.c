/* One request being served (struct sreq, server_int.h): its reply, its end, and the
 * worker key of its object. Below server.c and the handlers in replicate.c, resync.c and
 * repair.c, so that they call it and not each other. */
#include "store/server_int.h"

#include <stdlib.h>

void store_req_free(struct sreq *q)
{
	struct store_server *s = q->s;
	frame_free(q->f);
	conn_put(q->c);
	free(q);
	atomic_fetch_sub(&s->pending, 1);
}

void store_reply_status(struct sreq *q, int status)
{
	conn_reply(q->c, q->f, status, NULL, NULL, 0, NULL, NULL);
}

/* Hash that sends all mutations of one object to one worker. */
uint64_t store_obj_key(uint64_t ino, uint32_t stripe)
{
	return ino * 0x100000001B3ULL ^ stripe;
}
