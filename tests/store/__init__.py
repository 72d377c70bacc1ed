"""The storage layer: LanceDB on disk and on S3, durable deletion, maintenance, scale."""
