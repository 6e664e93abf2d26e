B
grad_slopeJ\ñvI∑Î@æ÷-ÃÅ@ê§’{\ô‚ø