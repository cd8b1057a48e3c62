"""What generated agent packages and applications import at run time.

It never imports the DSL or the generator; the generator imports the shared algorithms from
here (tool IDs, titles, search documents, fingerprints) so that generation and run time agree.
"""
