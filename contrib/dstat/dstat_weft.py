### weft: read and write throughput of this node's weft mounts, for dstat -M weft
### (the counterpart of dstat's gpfs plugin). Each weft mount rewrites a JSON file of
### its counters every second (schema weft.stats/1, docs/operations.md); this sums them.

class dstat_plugin(dstat):
    """
    Total read and write throughput (bytes) through the weft mounts of this node.
    """

    def __init__(self):
        self.name = 'weft i/o'
        self.nick = ('read', 'writ')
        self.vars = ('fuse_read_bytes', 'fuse_write_bytes')
        self.type = 'b'
        self.width = 5
        self.scale = 1024

    def statsdir(self):
        d = os.environ.get('WEFT_RUN_DIR')
        if d:
            return os.path.join(d, 'mounts')
        if os.geteuid() == 0:
            return '/run/weft/mounts'
        x = os.environ.get('XDG_RUNTIME_DIR')
        if x:
            return os.path.join(x, 'weft', 'mounts')
        return '/tmp/weft-%d/mounts' % os.geteuid()

    def check(self):
        if not os.path.isdir(self.statsdir()):
            raise Exception('No weft mount on this node (no %s)' % self.statsdir())
        return True

    def extract(self):
        import json, glob
        totals = dict((name, 0) for name in self.vars)
        for path in glob.glob(os.path.join(self.statsdir(), '*.json')):
            try:
                with open(path) as f:
                    counters = json.load(f).get('counters', {})
                for name in self.vars:
                    totals[name] += int(counters.get(name, 0))
            except (IOError, OSError, ValueError):
                continue  # a mount going away, or being rewritten
        for name in self.vars:
            self.set2[name] = totals[name]
            self.val[name] = max(0, self.set2[name] - self.set1.get(name, 0)) * 1.0 / elapsed
        if step == op.delay:
            self.set1.update(self.set2)

# vim:ts=4:sw=4:et
