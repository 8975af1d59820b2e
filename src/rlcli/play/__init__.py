"""A trained policy at work: evaluated on envs of its own (:mod:`~rlcli.play.evaluation`), a run folder or
checkpoint played back by ``rlcli eval`` (:mod:`~rlcli.play.playback`), exported as one deployable file
(:mod:`~rlcli.play.export`) and such a file played (:mod:`~rlcli.play.policy_file`).
"""
