B
grad_scaleJMa¾YlbÀ9"?HÀ‹?