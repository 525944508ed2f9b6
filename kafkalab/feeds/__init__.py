"""What the console watches and drives, without Textual: sources, the frames they hand the panes, feeds.

Everything here may block and runs in the console's thread workers; the ui package only renders frames.
"""
