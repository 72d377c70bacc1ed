"""When passes run in a server: the write observer the memory core reports to (``observing``),
the per-partition schedule (``maintainer``), the forget window's purges (``purges``) and the
server's schedule that joins them with the retention sweep (``schedule``)."""
